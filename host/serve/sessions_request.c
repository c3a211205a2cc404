/* /v1/sessions request bodies (sessions.h): a creation's policy and limits, a cell's code
 * and limits, or the field that is wrong. No I/O and no session: sessions.c acts on them,
 * and tests/fuzz/fuzz_session_http.c reaches them without a server. */
#include "sessions.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsoncheck.h"
#include "util/util.h"

enum { DEFAULT_IDLE_MS = 600000 };

static int bad(struct ps_bad *b, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct ps_bad *b, const char *field, const char *fmt, ...)
{
	va_list ap;

	snprintf(b->field, sizeof(b->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(b->reason, sizeof(b->reason), fmt, ap);
	va_end(ap);
	ps_utf8_trim_cut(b->reason);	/* a quoted key or value cut by a buffer's end */
	return -1;
}

/* A key twice in obj (cJSON finds the first copy, a proxy may take the last: a body must
 * mean one thing), named in the refusal; the field is the object's (the body's: ""). */
static int twice(const cJSON *obj, struct ps_bad *b)
{
	const char *dup = ps_json_duplicate_key(obj);
	const char *in = obj && obj->string ? obj->string : NULL;

	if (!dup)
		return 0;
	return bad(b, in, "%s%s\"%.*s\" given twice", in ? in : "body", ": ",
		   ps_utf8_clip(dup, 64), dup);
}

/* A key of the body that is none of known (NULL-terminated): refused, since a misspelt
 * "limits" would otherwise leave the cells the policy's looser ones, silently. */
static int unknown(const cJSON *obj, const char *const *known, const char *list, struct ps_bad *b)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, obj) {
		size_t k = 0;

		while (known[k] && strcmp(known[k], it->string))
			k++;
		if (!known[k])
			return bad(b, NULL, "body: \"%.*s\" is not a field (known: %s)",
				   ps_utf8_clip(it->string, 64), it->string, list);
	}
	return 0;
}

static size_t policy_index(const struct ps_policy *policies, size_t n, const cJSON *pol, bool *ok)
{
	*ok = true;
	if (!pol)
		return 0;
	for (size_t i = 0; cJSON_IsString(pol) && i < n; i++)
		if (!strcmp(policies[i].name, pol->valuestring))
			return i;
	*ok = false;
	return 0;
}

/* The cells' limits: the policy's, tightened by the request (memory too: it is the
 * session's). 0, or -1 with the reason in err naming the field. */
static int create_limits(const struct ps_policy *p, const cJSON *lim, struct ps_limits *out,
			 char *err, size_t errlen)
{
	struct ps_policy tmp = *p;
	const cJSON *it;

	if (lim && !cJSON_IsObject(lim)) {
		snprintf(err, errlen, "limits: not an object");
		return -1;
	}
	cJSON_ArrayForEach(it, lim)
	{
		if (!cJSON_IsString(it)) {
			snprintf(err, errlen, "limits.%.*s: not a string",
				 ps_utf8_clip(it->string, 64), it->string);
			return -1;
		}
		if (ps_policy_override(&tmp, it->string, it->valuestring, true, err, errlen) < 0)
			return -1;
	}
	*out = tmp.limits;
	return 0;
}

static int session_limits(const cJSON *sl, struct ps_session_limits *out, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		size_t off;
		bool count;
	} keys[] = {
		{ "idle", offsetof(struct ps_session_limits, idle_ms), false },
		{ "lifetime", offsetof(struct ps_session_limits, lifetime_ms), false },
		{ "cpu", offsetof(struct ps_session_limits, cpu_ms), false },
		{ "cells", offsetof(struct ps_session_limits, cells), true },
	};
	const cJSON *it;

	memset(out, 0, sizeof(*out));
	out->idle_ms = DEFAULT_IDLE_MS;
	if (sl && !cJSON_IsObject(sl)) {
		snprintf(err, errlen, "session: not an object");
		return -1;
	}
	cJSON_ArrayForEach(it, sl)
	{
		size_t k = 0;

		while (k < PS_ARRAY_LEN(keys) && strcmp(keys[k].key, it->string))
			k++;
		if (k == PS_ARRAY_LEN(keys)) {
			snprintf(err, errlen, "session.%.*s: unknown (idle, lifetime, cpu, cells)",
				 ps_utf8_clip(it->string, 64), it->string);
			return -1;
		}
		uint64_t *v = (uint64_t *)((char *)out + keys[k].off);
		/* bounded before the cast (a double past 2^64 is UB to convert), and whole */
		if (keys[k].count && cJSON_IsNumber(it) && it->valuedouble >= 0 &&
		    it->valuedouble < 1e15 && it->valuedouble == (double)(uint64_t)it->valuedouble) {
			*v = (uint64_t)it->valuedouble;
		} else if (keys[k].count || !cJSON_IsString(it) ||
			   ps_parse_duration_ms(it->valuestring, v, err, errlen) < 0) {
			snprintf(err, errlen, "session.%.*s: %s", ps_utf8_clip(it->string, 64), it->string,
				 keys[k].count ? "not a whole number below 1e15"
					       : "not a duration (\"30s\", \"10m\")");
			return -1;
		}
		/* 0 never means "no limit" in a request (issue 9): a key left out is the server's
		 * default (none, but the idle reaping); the idle time may only be shortened */
		if (*v == 0) {
			snprintf(err, errlen, "session.%s: 0 is refused (it would mean no limit); leave "
				 "the key out for the server's default (%s)", keys[k].key,
				 k == 0 ? "10m" : "none");
			return -1;
		}
		if (k == 0 && *v > DEFAULT_IDLE_MS) {
			snprintf(err, errlen, "session.idle: longer than the server's 10m (idle "
				 "sessions are reaped; a request may only shorten that)");
			return -1;
		}
	}
	return 0;
}

int ps_sessions_parse_create(const struct ps_policy *policies, size_t n, const char *body,
			     size_t len, struct ps_session_create *c, struct ps_bad *b)
{
	static const char *const known[] = { "policy", "limits", "session", NULL };
	const char *problem = len ? ps_json_text_problem(body, len) : NULL;
	cJSON *m = problem ? NULL : len ? cJSON_ParseWithLength(body, len) : cJSON_CreateObject();
	char err[512];
	bool ok;
	int ret = -1;

	memset(c, 0, sizeof(*c));
	if (problem || !cJSON_IsObject(m)) {
		bad(b, NULL, "body: %s", problem ? problem : "not a JSON object");
		goto out;
	}
	if (unknown(m, known, "policy, limits, session", b) < 0 || twice(m, b) < 0 ||
	    twice(cJSON_GetObjectItemCaseSensitive(m, "limits"), b) < 0 ||
	    twice(cJSON_GetObjectItemCaseSensitive(m, "session"), b) < 0)
		goto out;
	c->policy = policy_index(policies, n, cJSON_GetObjectItemCaseSensitive(m, "policy"), &ok);
	if (!ok) {
		bad(b, "policy", "policy: not one this server serves");
		goto out;
	}
	if (create_limits(&policies[c->policy], cJSON_GetObjectItemCaseSensitive(m, "limits"),
			  &c->limits, err, sizeof(err)) < 0 ||
	    session_limits(cJSON_GetObjectItemCaseSensitive(m, "session"), &c->session, err,
			   sizeof(err)) < 0) {
		bad(b, !strncmp(err, "session", 7) ? "session" : "limits", "%s", err);
		goto out;
	}
	ret = 0;
out:
	cJSON_Delete(m);
	return ret;
}

int ps_sessions_parse_exec(const char *body, size_t len, struct ps_session_cell *c,
			   struct ps_bad *b)
{
	static const char *const known[] = { "code", "limits", NULL };
	const char *problem = ps_json_text_problem(body ? body : "", len);
	cJSON *m = problem ? NULL : cJSON_ParseWithLength(body ? body : "", len);
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(m, "code");
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(m, "limits");
	int ret = -1;

	memset(c, 0, sizeof(*c));
	if (problem || !cJSON_IsObject(m) || !cJSON_IsString(code)) {
		if (problem)
			bad(b, NULL, "body: %s", problem);
		else
			bad(b, m ? "code" : NULL, "%s", m ? "code: missing or not a string"
							  : "body: not a JSON object");
		goto out;
	}
	if (unknown(m, known, "code, limits", b) < 0 || twice(m, b) < 0 || twice(lim, b) < 0)
		goto out;
	c->code = strdup(code->valuestring);
	c->len = c->code ? strlen(c->code) : 0;
	/* anything but null goes to the session host, which says what is wrong with it */
	if (lim && !cJSON_IsNull(lim))
		c->limits = cJSON_PrintUnformatted(lim);
	if (!c->code || (lim && !cJSON_IsNull(lim) && !c->limits)) {
		ps_sessions_cell_free(c);
		bad(b, NULL, "out of memory");
		goto out;
	}
	ret = 0;
out:
	cJSON_Delete(m);
	return ret;
}

void ps_sessions_cell_free(struct ps_session_cell *c)
{
	free(c->code);
	free(c->limits);
	memset(c, 0, sizeof(*c));
}
