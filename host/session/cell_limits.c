/* A cell's "limits" as the session host reads them (session.h): pure parsing, apart from
 * host.c (which starts an interpreter), so that tests/fuzz/ can reach it. */
#include "session.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "util/jsoncheck.h"

int ps_session_cell_limits(const struct ps_policy *p, const struct ps_limits *cell,
			   const cJSON *lim, struct ps_limits *out, char *err, size_t errlen)
{
	struct ps_policy tmp = *p;	/* only its limits are written */
	const cJSON *it;
	const char *dup;

	tmp.limits = *cell;
	if (lim && !cJSON_IsNull(lim) && !cJSON_IsObject(lim)) {
		snprintf(err, errlen, "limits: not an object");
		return -1;
	}
	if ((dup = ps_json_duplicate_key(lim))) {
		/* each copy would apply in turn, where another parser would take one */
		snprintf(err, errlen, "limits.%.*s: given twice", ps_utf8_clip(dup, 64), dup);
		return -1;
	}
	cJSON_ArrayForEach(it, lim)
	{
		char v[64];

		if (!strcmp(it->string, "memory")) {
			snprintf(err, errlen, "limits.memory: memory is the session's as a whole, not "
				 "a cell's (set it when the session starts)");
			return -1;
		}
		if (strcmp(it->string, "wall") && strcmp(it->string, "cpu") &&
		    strcmp(it->string, "output")) {
			snprintf(err, errlen, "limits.%.*s: not a cell limit (known: wall, cpu, "
				 "output)", ps_utf8_clip(it->string, 64), it->string);
			return -1;
		}
		/* a string as it is (a copy into v cut a long one, maybe inside a character,
		 * and the units parser's message quoted the cut text back) */
		const char *val = v;

		if (cJSON_IsString(it))
			val = it->valuestring;
		else if (cJSON_IsNumber(it))
			snprintf(v, sizeof(v), "%.0f", it->valuedouble);
		else {
			snprintf(err, errlen, "limits.%.*s: not a string or number",
				 ps_utf8_clip(it->string, 64), it->string);
			return -1;
		}
		if (ps_policy_override(&tmp, it->string, val, true, err, errlen) < 0) {
			ps_utf8_trim_cut(err);	/* it quotes the value, maybe cut */
			return -1;
		}
	}
	*out = tmp.limits;
	return 0;
}
