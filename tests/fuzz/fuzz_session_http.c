/* /v1/sessions bodies (host/serve/sessions_request.c), as a creation and as a cell, and a
 * cell's limits as its session host reads them (host/session/cell_limits.c). A creation is a
 * served policy with limits that only ever tighten that policy's, or a refusal naming policy,
 * limits, session or the body; a cell is code that is the body's whole string, UTF-8, with
 * limits that tighten the session's or are refused naming "limits", or a refusal naming code
 * or the body. An accepted body has no NUL (raw, or \u0000 in a string: the code would end
 * there), is UTF-8, and has no key twice in an object (cJSON takes the first copy, a proxy
 * may take the last); a refusal's reason is UTF-8 when the body is. */
#include <math.h>

#include "fuzz.h"
#include "serve/sessions.h"
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
			fprintf(stderr, "fuzz_session_http: %s\n", err);
			exit(1);
		}
		npolicies++;
	}
	return 0;
}

#define LIMIT_FIELDS(X)                                                                    \
	X(wall_ms) X(cpu_ms) X(memory_bytes) X(output_bytes) X(file_size_bytes) X(open_files) \
	X(processes) X(scratch_bytes)

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

/* A key twice in obj or in an object inside it, down to depth levels (a cell body's limits
 * are the second; what is inside a limit the session host refuses as not a string or
 * number, which check_cell_limits sees). */
static bool has_duplicate_key(const cJSON *obj, int depth)
{
	if (depth <= 0)
		return false;
	for (const cJSON *a = obj ? obj->child : NULL; a; a = a->next) {
		if (has_duplicate_key(a, depth - 1))
			return true;
		if (!cJSON_IsObject(obj))
			continue;
		for (const cJSON *b = a->next; b; b = b->next)
			if (a->string && b->string && !strcmp(a->string, b->string))
				return true;
	}
	return false;
}

/* Every key of the body is one of known (NULL-terminated). */
static bool keys_known(const cJSON *m, const char *const *known)
{
	for (const cJSON *it = m ? m->child : NULL; it; it = it->next) {
		size_t k = 0;

		while (known[k] && strcmp(known[k], it->string))
			k++;
		if (!known[k])
			return false;
	}
	return true;
}

static void check_body_accepted(const uint8_t *d, size_t n, const char *const *known, int depth)
{
	cJSON *m = cJSON_ParseWithLength((const char *)d, n);

	FUZZ_CHECK(!memchr(d, '\0', n) && !nul_escape(d, n), "a body with a NUL was accepted");
	FUZZ_CHECK(fuzz_utf8_valid(d, n), "a body that is not UTF-8 was accepted");
	FUZZ_CHECK(!has_duplicate_key(m, depth), "a body with a key given twice was accepted");
	/* a misspelt "limits" would leave the policy's looser limits, silently */
	FUZZ_CHECK(keys_known(m, known), "a body with an unknown key was accepted");
	cJSON_Delete(m);
}

static void check_refusal(const struct ps_bad *b, const char *const *fields, size_t nf,
			  bool utf8)
{
	bool known = !b->field[0];

	FUZZ_CHECK(memchr(b->field, '\0', sizeof(b->field)) &&
		   memchr(b->reason, '\0', sizeof(b->reason)), "unterminated");
	FUZZ_CHECK(b->reason[0], "a refusal without a reason (field '%s')", b->field);
	for (size_t i = 0; i < nf; i++)
		known |= !strcmp(b->field, fields[i]);
	FUZZ_CHECK(known, "an unknown field '%s' (%s)", b->field, b->reason);
	FUZZ_CHECK(!strncmp(b->reason, b->field, strlen(b->field)),
		   "the reason '%s' does not name its field '%s'", b->reason, b->field);
	if (utf8)
		FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)b->reason, strlen(b->reason)),
			   "the reason is not UTF-8: '%s'", b->reason);
}

static void check_create(const uint8_t *data, size_t size, bool utf8)
{
	static const char *const fields[] = { "policy", "limits", "session", NULL };
	struct ps_session_create c;
	struct ps_bad b;

	memset(&b, 0, sizeof(b));
	if (ps_sessions_parse_create(policies, npolicies, (const char *)data, size, &c, &b) < 0) {
		check_refusal(&b, fields, PS_ARRAY_LEN(fields) - 1, utf8);
		return;
	}
	if (size)
		check_body_accepted(data, size, fields, 1000);
	FUZZ_CHECK(c.policy < npolicies, "policy index %zu", c.policy);
#define TIGHTER(f)                                                                         \
	FUZZ_CHECK(c.limits.f <= policies[c.policy].limits.f,                               \
		   "limits." #f " loosened: %ju > the policy's %ju", (uintmax_t)c.limits.f,     \
		   (uintmax_t)policies[c.policy].limits.f);
	LIMIT_FIELDS(TIGHTER)
#undef TIGHTER
	FUZZ_CHECK(c.limits.wall_ms >= 1 && c.limits.memory_bytes >= 1, "a zero limit");
}

static void check_cell_limits(const char *json)
{
	cJSON *lim = cJSON_Parse(json);

	FUZZ_CHECK(lim, "limits text is not JSON: %s", json);
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
			   "cell limits loosened under %s", policies[i].name);
		FUZZ_CHECK(out.memory_bytes == cell->memory_bytes, "a cell changed the memory");
	}
	cJSON_Delete(lim);
}

static void check_exec(const uint8_t *data, size_t size, bool utf8)
{
	static const char *const fields[] = { "code", "limits" };
	struct ps_session_cell c;
	struct ps_bad b;

	memset(&b, 0, sizeof(b));
	if (ps_sessions_parse_exec((const char *)data, size, &c, &b) < 0) {
		check_refusal(&b, fields, PS_ARRAY_LEN(fields), utf8);
		return;
	}
	check_body_accepted(data, size, (const char *const[]){ "code", "limits", NULL }, 2);
	FUZZ_CHECK(c.code && c.len == strlen(c.code), "code length %zu", c.len);
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)c.code, c.len), "code is not UTF-8");
	if (c.limits)
		check_cell_limits(c.limits);
	ps_sessions_cell_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool utf8 = fuzz_utf8_valid(data, size);

	check_create(data, size, utf8);
	check_exec(data, size, utf8);
	return 0;
}
