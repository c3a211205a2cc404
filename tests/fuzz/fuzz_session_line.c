/* `pysnip session`'s stdin lines (host/cli/session_line.c), and the cell limits they carry as
 * the session host reads them (host/session/cell_limits.c). Any line is either one request
 * whose fields are the JSON's, or an error whose message names its field. An accepted line:
 * its object has no key twice (cJSON takes the first copy, other JSON parsers the last: a
 * line must mean one thing), the line has no NUL (raw, or as \u0000 in a string, which would
 * end the C string and run less code than was sent), code and input are UTF-8, a cursor lies
 * within the code, an id is a string or a finite number; a cell's limits, handed to the
 * session host over each served policy, only ever tighten the cells' limits or are refused
 * naming "limits". */
#include <math.h>

#include "cli/session_line.h"
#include "fuzz.h"
#include "policy/policy.h"
#include "session/session.h"
#include "util/util.h"

#include <cjson/cJSON.h>

static struct ps_policy policies[3];
static size_t npolicies;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const names[] = { "default", "strict", "notebook" };
	char err[1024];

	for (size_t i = 0; i < PS_ARRAY_LEN(names); i++) {
		if (ps_policy_load(names[i], &policies[npolicies], err, sizeof(err)) < 0) {
			fprintf(stderr, "fuzz_session_line: %s\n", err);
			exit(1);
		}
		npolicies++;
	}
	return 0;
}

/* An unescaped "\u0000" in the text (an odd run of backslashes before it). */
static bool nul_escape(const uint8_t *d, size_t n)
{
	for (size_t i = 0; i + 6 <= n; i++) {
		size_t bs = 0;

		if (d[i] != '\\' || (d[i + 1] != 'u' && d[i + 1] != 'U') ||
		    memcmp(d + i + 2, "0000", 4))
			continue;
		while (bs <= i && d[i - bs] == '\\')
			bs++;
		if (bs % 2)
			return true;
	}
	return false;
}

static bool has_duplicate_key(const cJSON *obj)
{
	for (const cJSON *a = obj ? obj->child : NULL; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			if (a->string && b->string && !strcmp(a->string, b->string))
				return true;
	return false;
}

static void check_limits(const char *json)
{
	cJSON *lim = cJSON_Parse(json);

	FUZZ_CHECK(cJSON_IsObject(lim), "limits text is not an object: %s", json);
	for (size_t i = 0; i < npolicies; i++) {
		const struct ps_limits *cell = &policies[i].limits;
		struct ps_limits out;
		char err[512] = "";

		if (ps_session_cell_limits(&policies[i], cell, lim, &out, err, sizeof(err)) < 0) {
			FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)) && !strncmp(err, "limits", 6),
				   "a limits refusal not naming limits: '%s'", err);
			FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)err, strlen(err)),
				   "a limits refusal that is not UTF-8: '%s'", err);
			continue;
		}
		FUZZ_CHECK(out.wall_ms <= cell->wall_ms && out.cpu_ms <= cell->cpu_ms &&
			   out.output_bytes <= cell->output_bytes,
			   "limits loosened under %s: wall %ju cpu %ju output %ju", policies[i].name,
			   (uintmax_t)out.wall_ms, (uintmax_t)out.cpu_ms,
			   (uintmax_t)out.output_bytes);
		FUZZ_CHECK(out.wall_ms >= 1 && out.cpu_ms != PS_LIMIT_NONE,
			   "a cell without a limit: wall %ju cpu %ju", (uintmax_t)out.wall_ms,
			   (uintmax_t)out.cpu_ms);
		FUZZ_CHECK(out.memory_bytes == cell->memory_bytes &&
			   out.processes == cell->processes &&
			   out.file_size_bytes == cell->file_size_bytes,
			   "a cell changed a session-wide limit");
	}
	cJSON_Delete(lim);
}

static void check_accepted(const struct ps_session_line *l, const uint8_t *d, size_t n)
{
	cJSON *m = cJSON_ParseWithLength((const char *)d, n);

	FUZZ_CHECK(!memchr(d, '\0', n) && !nul_escape(d, n), "a line with a NUL was accepted");
	FUZZ_CHECK(cJSON_IsObject(m), "accepted, but not a JSON object");
	FUZZ_CHECK(!has_duplicate_key(m), "a line with a key given twice was accepted");
	for (const cJSON *it = m->child; it; it = it->next) {
		static const char *const known[] = { "id", "code", "limits", "query", "cursor",
						     "interrupt", "input", "restart" };
		bool ok = false;

		for (size_t k = 0; k < PS_ARRAY_LEN(known); k++)
			ok |= !strcmp(it->string, known[k]);
		/* a misspelt "limits" would leave the session's looser limits, silently */
		FUZZ_CHECK(ok, "a line with an unknown key '%s' was accepted", it->string);
	}
	if (l->id && cJSON_IsNumber(l->id))
		FUZZ_CHECK(isfinite(l->id->valuedouble), "an id that prints as null");
	switch (l->kind) {
	case PS_SLINE_CELL:
	case PS_SLINE_QUERY:
		FUZZ_CHECK(l->id && (cJSON_IsString(l->id) || cJSON_IsNumber(l->id)), "bad id");
		FUZZ_CHECK(l->code, "a cell without code");
		FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)l->code, strlen(l->code)),
			   "code is not UTF-8");
		FUZZ_CHECK(!strcmp(l->code, cJSON_GetObjectItemCaseSensitive(m, "code")->valuestring),
			   "code is not the line's");
		if (l->kind == PS_SLINE_QUERY)
			FUZZ_CHECK(l->query && l->cursor <= strlen(l->code),
				   "cursor %zu past the code's %zu bytes", l->cursor,
				   strlen(l->code));
		else if (l->limits)
			check_limits(l->limits);
		break;
	case PS_SLINE_INTERRUPT:
		FUZZ_CHECK(l->id, "an interrupt without an id");
		break;
	case PS_SLINE_INPUT:
		FUZZ_CHECK(!l->input || fuzz_utf8_valid((const unsigned char *)l->input,
							strlen(l->input)),
			   "input is not UTF-8");
		break;
	default:
		break;
	}
	cJSON_Delete(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fields[] = { "id", "code", "limits", "query", "cursor", "input",
					      "interrupt" };
	struct ps_session_line l;
	/* the line as getline gives it: NUL-terminated, maybe with NULs inside */
	char *line = fuzz_cstr(data, size);

	if (ps_session_line_parse(line, size, &l) == PS_SLINE_ERROR) {
		bool known = !l.field;

		FUZZ_CHECK(fuzz_msg_ok(l.message, sizeof(l.message)), "refused without a reason");
		for (size_t i = 0; l.field && i < PS_ARRAY_LEN(fields); i++)
			known |= !strcmp(l.field, fields[i]);
		FUZZ_CHECK(known, "an unknown field '%s'", l.field);
		FUZZ_CHECK(!l.field || !strncmp(l.message, l.field, strlen(l.field)),
			   "the message '%s' does not name its field '%s'", l.message, l.field);
		if (fuzz_utf8_valid(data, size))
			FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)l.message,
						   strlen(l.message)),
				   "the message is not UTF-8: '%s'", l.message);
	} else {
		check_accepted(&l, data, size);
	}
	ps_session_line_free(&l);
	free(line);
	return 0;
}
