/* One stdin line of `pysnip session` (cmd_session.c's protocol), parsed apart from the
 * threads and the session that act on it, so that tests/fuzz/fuzz_session_line.c can reach
 * it without processes. */
#ifndef PS_CLI_SESSION_LINE_H
#define PS_CLI_SESSION_LINE_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

enum ps_session_line_kind {
	PS_SLINE_ERROR,		/* the line is wrong: field and message say how */
	PS_SLINE_CELL,		/* {"id", "code", "limits"?} */
	PS_SLINE_QUERY,		/* {"id", "query", "code", "cursor"?} */
	PS_SLINE_INTERRUPT,	/* {"interrupt": ID} */
	PS_SLINE_INPUT,		/* {"input": S|null, "id"?} */
	PS_SLINE_RESTART,	/* {"restart": true} */
};

struct ps_session_line {
	enum ps_session_line_kind kind;
	/* owned copies (malloc'd), NULL where the kind has none. id: the cell's or query's id,
	 * the id to interrupt, the one an input answer or an error line carries back */
	struct cJSON *id;
	char *code;		/* CELL, QUERY: the whole string */
	char *limits;		/* CELL: the limits object as JSON text; NULL: the session's */
	char *query;		/* QUERY: "complete", "inspect" or "is_complete" */
	size_t cursor;		/* QUERY: a byte offset, at most the code's length */
	char *input;		/* INPUT: the answer; NULL: refused (null: EOFError in the cell) */
	const char *field;	/* ERROR: the field at fault; NULL: the line as a whole */
	char message[256];	/* ERROR */
};

/* line: len bytes (no newline needed). Fills *out (free it with ps_session_line_free, whatever
 * the kind) and returns its kind. */
enum ps_session_line_kind ps_session_line_parse(const char *line, size_t len,
						struct ps_session_line *out);
void ps_session_line_free(struct ps_session_line *l);

#endif
