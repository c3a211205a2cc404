/* `pysnip serve` requests: a POST body to a job, or the field and reason it is wrong.
 * The only file of the server that includes cJSON.h. */
#include "server.h"

#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/codec.h"
#include "util/jsoncheck.h"
#include "util/util.h"

struct served {
	const struct ps_policy *policies;
	size_t n;
};

static int bad(struct ps_bad *b, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct ps_bad *b, const char *field, const char *fmt, ...)
{
	va_list ap;

	snprintf(b->field, sizeof(b->field), "%.*s", ps_utf8_clip(field, sizeof(b->field) - 1), field);
	va_start(ap, fmt);
	vsnprintf(b->reason, sizeof(b->reason), fmt, ap);
	va_end(ap);
	ps_utf8_trim_cut(b->reason);
	return -1;
}

static int parse_policy(const struct served *s, const cJSON *v, struct ps_job *j, struct ps_bad *b)
{
	char served[256] = "";

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return bad(b, "policy", "policy: must be a string");
	for (size_t i = 0; i < s->n; i++) {
		if (!strcmp(s->policies[i].name, v->valuestring)) {
			j->policy = i;
			return 0;
		}
		snprintf(served + strlen(served), sizeof(served) - strlen(served), "%s%s",
			 i ? ", " : "", s->policies[i].name);
	}
	return bad(b, "policy", "policy: '%.*s' is not served here (served: %s)",
		   ps_utf8_clip(v->valuestring, 64), v->valuestring, served);
}

/* Does a key before it in obj have its name? cJSON keeps every copy of a key and its lookups
 * find the first, while other parsers (a proxy's, a client's) take the last: a body must
 * mean one thing. The objects checked hold only known keys (an unknown one is an error
 * before the next is looked at), so this stays a short scan. */
static bool duplicate(const cJSON *obj, const cJSON *it)
{
	for (const cJSON *e = obj->child; e && e != it; e = e->next)
		if (!strcmp(e->string, it->string))
			return true;
	return false;
}

/* Each limit may only tighten the policy's (ps_policy_override with tighten_only). */
static int parse_limits(const struct served *s, const cJSON *v, struct ps_job *j, struct ps_bad *b)
{
	struct ps_policy tmp = s->policies[j->policy];	/* only .limits is written */
	const cJSON *it;
	char field[64], num[64], err[512];

	j->limits = tmp.limits;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return bad(b, "limits", "limits: must be an object like {\"wall\": \"2s\"}");
	cJSON_ArrayForEach(it, v) {
		const char *val = num;

		snprintf(field, sizeof(field), "limits.%.*s", ps_utf8_clip(it->string, 50), it->string);
		if (duplicate(v, it))
			return bad(b, field, "%s: given twice", field);
		if (cJSON_IsString(it))
			val = it->valuestring;
		else if (cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble < 1e15)
			snprintf(num, sizeof(num), "%.17g", it->valuedouble);
		else
			return bad(b, field, "%s: must be a string like \"2s\" or \"64M\", or a "
				   "non-negative number (seconds or bytes)", field);
		if (ps_policy_override(&tmp, field, val, true, err, sizeof(err)) < 0)
			return bad(b, field, "%s", err);
	}
	j->limits = tmp.limits;
	return 0;
}

static int parse_stdin(const cJSON *v, struct ps_job *j, struct ps_bad *b)
{
	static const char *const empty[1] = { NULL };

	if (!j->batch) {
		j->n = 1;
		if (!v || cJSON_IsNull(v)) {
			j->stdins = (const char **)empty;
			return 0;
		}
		if (!cJSON_IsString(v))
			return bad(b, "stdin", "stdin: must be a string or null");
		j->stdins = malloc(sizeof(*j->stdins));
		if (!j->stdins)
			return bad(b, "stdin", "out of memory");
		j->stdins_owned = true;
		j->stdins[0] = v->valuestring;
		return 0;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1)
		return bad(b, "stdin", "stdin: a batch needs a non-empty list of strings");
	j->n = (size_t)cJSON_GetArraySize(v);
	if (j->n > PS_SERVE_BATCH_MAX)
		return bad(b, "stdin", "stdin: at most %d inputs in one batch", PS_SERVE_BATCH_MAX);
	j->stdins = calloc(j->n, sizeof(*j->stdins));
	if (!j->stdins)
		return bad(b, "stdin", "out of memory");
	j->stdins_owned = true;
	for (size_t i = 0; i < j->n; i++) {
		const cJSON *e = cJSON_GetArrayItem(v, (int)i);
		char f[32];

		if (!cJSON_IsString(e)) {
			snprintf(f, sizeof(f), "stdin[%zu]", i);
			return bad(b, f, "%s: must be a string", f);
		}
		j->stdins[i] = e->valuestring;
	}
	return 0;
}

/* What a batch may cost, known before it starts (server.h). */
static int batch_bounds(const struct ps_job *j, struct ps_bad *b)
{
	uint64_t out = j->limits.output_bytes * PS_SERVE_ESCAPED_MAX;
	uint64_t wall = j->limits.wall_ms * j->n;
	char have[32], most[32], cap[32];

	if (out && j->n * out > PS_SERVE_BATCH_ANSWER_MAX) {
		ps_format_size(j->limits.output_bytes, have, sizeof(have));
		ps_format_size(PS_SERVE_BATCH_ANSWER_MAX / PS_SERVE_ESCAPED_MAX / j->n >> 10 << 10,
			       most, sizeof(most));
		ps_format_size(PS_SERVE_BATCH_ANSWER_MAX, cap, sizeof(cap));
		return bad(b, "limits.output", "limits.output: %zu inputs at %s of output each "
			   "could answer more than a batch may (%s, output escaped 6 bytes a byte "
			   "at worst): give limits.output %s or less, or fewer inputs",
			   j->n, have, cap, most);
	}
	if (wall > PS_SERVE_BATCH_WALL_MAX_MS) {
		ps_format_duration_ms(j->limits.wall_ms, have, sizeof(have));
		ps_format_duration_ms(PS_SERVE_BATCH_WALL_MAX_MS / j->n, most, sizeof(most));
		ps_format_duration_ms(PS_SERVE_BATCH_WALL_MAX_MS, cap, sizeof(cap));
		return bad(b, "limits.wall", "limits.wall: %zu inputs at %s each could take more "
			   "than a batch may (%s): give limits.wall %s or less, or fewer inputs",
			   j->n, have, cap, most);
	}
	return 0;
}

/* "files": [{"path": "input/NAME", "content": BASE64}]: the run's inputs (NAME one path
 * component, no name twice), decoded here so the worker gets plain bytes. */
static int parse_files(const cJSON *v, struct ps_job *j, struct ps_bad *b)
{
	const cJSON *e;
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return bad(b, "files", "files: must be a list of {\"path\": \"input/NAME\", "
			   "\"content\": BASE64}");
	if (cJSON_GetArraySize(v) > PS_WREQ_INPUTS_MAX)
		return bad(b, "files", "files: at most %d", PS_WREQ_INPUTS_MAX);
	j->files = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*j->files));
	if (!j->files)
		return bad(b, "files", "out of memory");
	cJSON_ArrayForEach(e, v) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
		const char *name = cJSON_IsString(p) && !strncmp(p->valuestring, "input/", 6) ?
					   p->valuestring + 6 : NULL;
		char f[32];
		unsigned char *data;
		long n;

		snprintf(f, sizeof(f), "files[%zu]", i);
		if (!name || !*name || strchr(name, '/') || strlen(name) > 255 ||
		    !strcmp(name, ".") || !strcmp(name, ".."))
			return bad(b, f, "%s.path: must be \"input/NAME\", NAME one path component", f);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(j->files[k].name, name))
				return bad(b, f, "%s.path: input/%.255s given twice", f, name);
		if (!cJSON_IsString(c))
			return bad(b, f, "%s.content: required, the file's bytes as base64", f);
		data = malloc(strlen(c->valuestring) / 4 * 3 + 1);
		if (!data)
			return bad(b, f, "out of memory");
		n = ps_base64_decode(c->valuestring, strlen(c->valuestring), data);
		j->files[i] = (struct ps_file_in){ .name = name, .data = (const char *)data,
						   .len = n < 0 ? 0 : (size_t)n };
		j->n_files = ++i;
		if (n < 0)
			return bad(b, f, "%s.content: not base64 (RFC 4648, padded, no line breaks)", f);
	}
	return 0;
}

static const char *const known_keys[] = { "code", "stdin", "policy", "limits", "files" };

static int parse_job(const struct served *s, const cJSON *root, struct ps_job *j, struct ps_bad *b)
{
	const cJSON *it, *code;

	if (!cJSON_IsObject(root))
		return bad(b, "", "body: must be a JSON object");
	cJSON_ArrayForEach(it, root) {
		bool known = false;

		for (size_t i = 0; i < PS_ARRAY_LEN(known_keys); i++)
			known |= !strcmp(it->string, known_keys[i]);
		if (!known)
			return bad(b, it->string, "%.*s: unknown field (known: code, stdin, policy, "
				   "limits, files)", ps_utf8_clip(it->string, 50), it->string);
		if (duplicate(root, it))
			return bad(b, it->string, "%.*s: given twice", ps_utf8_clip(it->string, 50),
				   it->string);
	}
	code = cJSON_GetObjectItemCaseSensitive(root, "code");
	if (!cJSON_IsString(code))
		return bad(b, "code", "code: required, a string of Python source");
	j->code = code->valuestring;
	j->code_len = strlen(code->valuestring);
	if (parse_policy(s, cJSON_GetObjectItemCaseSensitive(root, "policy"), j, b) < 0 ||
	    parse_limits(s, cJSON_GetObjectItemCaseSensitive(root, "limits"), j, b) < 0 ||
	    parse_stdin(cJSON_GetObjectItemCaseSensitive(root, "stdin"), j, b) < 0 ||
	    parse_files(cJSON_GetObjectItemCaseSensitive(root, "files"), j, b) < 0)
		return -1;
	return j->batch ? batch_bounds(j, b) : 0;
}

int ps_job_parse(const char *body, size_t len, bool batch, const struct ps_policy *policies,
		 size_t n, struct ps_job *j, struct ps_bad *b)
{
	const struct served s = { policies, n };
	const char *problem;
	cJSON *root;

	memset(j, 0, sizeof(*j));
	j->batch = batch;
	if (len && (problem = ps_json_text_problem(body, len)))
		return bad(b, "", "body: %s", problem);
	root = cJSON_ParseWithLength(body ? body : "", len);
	if (!root)
		return bad(b, "", "body: not valid JSON");
	j->root = root;
	return parse_job(&s, root, j, b);
}

void ps_job_free(struct ps_job *j)
{
	for (size_t i = 0; j->files && i < j->n_files; i++)
		free((void *)j->files[i].data);
	free(j->files);
	if (j->stdins_owned)
		free(j->stdins);
	cJSON_Delete(j->root);
	memset(j, 0, sizeof(*j));
}
