/* `pysnip session`'s stdin lines (session_line.h): JSON to a cell, a query, an interrupt, an
 * input() answer or a restart, or the field that is wrong. No I/O: cmd_session.c acts. */
#include "session_line.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsoncheck.h"

static enum ps_session_line_kind refuse(struct ps_session_line *l, const cJSON *id,
					const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum ps_session_line_kind refuse(struct ps_session_line *l, const cJSON *id,
					const char *field, const char *fmt, ...)
{
	va_list ap;

	l->kind = PS_SLINE_ERROR;
	cJSON_Delete(l->id);
	l->id = id ? cJSON_Duplicate(id, true) : NULL;
	l->field = field;
	va_start(ap, fmt);
	vsnprintf(l->message, sizeof(l->message), fmt, ap);
	va_end(ap);
	return l->kind;
}

static bool known_query(const cJSON *q)
{
	static const char *const kinds[] = { "complete", "inspect", "is_complete" };

	for (size_t i = 0; cJSON_IsString(q) && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(q->valuestring, kinds[i]))
			return true;
	return false;
}

/* What may name a cell: a string, or a finite number (1e999 parses as infinity, which cJSON
 * prints as null: every event would lose its id). */
static bool id_ok(const cJSON *id)
{
	return cJSON_IsString(id) || (cJSON_IsNumber(id) && isfinite(id->valuedouble));
}

static const char *unknown_key(const cJSON *m)
{
	static const char *const known[] = { "id", "code", "limits", "query", "cursor",
					     "interrupt", "input", "restart" };
	const cJSON *it;

	cJSON_ArrayForEach(it, m) {
		size_t k = 0;

		while (k < sizeof(known) / sizeof(known[0]) && strcmp(known[k], it->string))
			k++;
		if (k == sizeof(known) / sizeof(known[0]))
			return it->string;
	}
	return NULL;
}

/* A cell or a query: {"id", "code", ...}. */
static enum ps_session_line_kind parse_cell(const cJSON *m, struct ps_session_line *l)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(m, "code");
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(m, "limits");
	const cJSON *query = cJSON_GetObjectItemCaseSensitive(m, "query");
	const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(m, "cursor");
	const char *dup = ps_json_duplicate_key(lim);

	if (!id_ok(id))
		return refuse(l, NULL, "id", "id: missing, or not a string or finite number");
	if (!cJSON_IsString(code))
		return refuse(l, id, "code", "code: missing or not a string");
	if (lim && !cJSON_IsObject(lim) && !cJSON_IsNull(lim))
		return refuse(l, id, "limits", "limits: not an object");
	if (dup)
		return refuse(l, id, "limits", "limits: \"%.*s\" given twice", ps_utf8_clip(dup, 64),
			      dup);
	if (query && !known_query(query))
		return refuse(l, id, "query", "query: complete, inspect or is_complete");
	/* within the code (checked before the cast: a double past SIZE_MAX is UB to convert) */
	if (cursor && !(cJSON_IsNumber(cursor) && cursor->valuedouble >= 0 &&
			cursor->valuedouble <= (double)strlen(code->valuestring)))
		return refuse(l, id, "cursor", "cursor: not a non-negative number within the code "
			      "(at most its length, %zu)", strlen(code->valuestring));
	l->kind = query ? PS_SLINE_QUERY : PS_SLINE_CELL;
	l->id = cJSON_Duplicate(id, true);
	l->code = strdup(code->valuestring);
	l->query = query ? strdup(query->valuestring) : NULL;
	l->cursor = cursor ? (size_t)cursor->valuedouble : strlen(code->valuestring);
	l->limits = lim && cJSON_IsObject(lim) ? cJSON_PrintUnformatted(lim) : NULL;
	if (!l->id || !l->code || (query && !l->query) || (lim && cJSON_IsObject(lim) && !l->limits))
		return refuse(l, id, NULL, "out of memory");
	return l->kind;
}

enum ps_session_line_kind ps_session_line_parse(const char *line, size_t len,
						struct ps_session_line *l)
{
	const char *problem = ps_json_text_problem(line, len);
	cJSON *m = problem ? NULL : cJSON_ParseWithLength(line, len);
	const cJSON *intr = cJSON_GetObjectItemCaseSensitive(m, "interrupt");
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(m, "input");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const char *dup;

	memset(l, 0, sizeof(*l));
	if (problem) {
		refuse(l, NULL, NULL, "line: %s", problem);
	} else if (!cJSON_IsObject(m)) {
		refuse(l, NULL, NULL, "not a JSON object");
	} else if ((dup = ps_json_duplicate_key(m))) {
		/* cJSON finds the first copy, other parsers the last: a line means one thing */
		refuse(l, NULL, NULL, "line: \"%.*s\" given twice", ps_utf8_clip(dup, 64), dup);
	} else if ((dup = unknown_key(m))) {
		/* a misspelt "limits" would run the cell under the session's looser ones */
		refuse(l, NULL, NULL, "line: \"%.*s\" is not a field (known: id, code, limits, "
		       "query, cursor, interrupt, input, restart)", ps_utf8_clip(dup, 64), dup);
	} else if (intr && !id_ok(intr)) {
		refuse(l, NULL, "interrupt", "interrupt: not a cell's id (a string or finite number)");
	} else if (intr) {
		l->kind = PS_SLINE_INTERRUPT;
		l->id = cJSON_Duplicate(intr, true);
	} else if (input) {
		if (id && cJSON_IsNumber(id) && !isfinite(id->valuedouble)) {
			refuse(l, NULL, "id", "id: not a finite number");
		} else if (!cJSON_IsString(input) && !cJSON_IsNull(input)) {
			refuse(l, id, "input",
			       "input: no cell is waiting for input (or not a string/null)");
		} else {
			l->kind = PS_SLINE_INPUT;
			l->id = id ? cJSON_Duplicate(id, true) : NULL;
			l->input = cJSON_IsString(input) ? strdup(input->valuestring) : NULL;
		}
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "restart"))) {
		l->kind = PS_SLINE_RESTART;
	} else {
		parse_cell(m, l);
	}
	cJSON_Delete(m);
	return l->kind;
}

void ps_session_line_free(struct ps_session_line *l)
{
	cJSON_Delete(l->id);
	free(l->code);
	free(l->limits);
	free(l->query);
	free(l->input);
	memset(l, 0, sizeof(*l));
}
