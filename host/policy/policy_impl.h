/* Shared by the host/policy files only: the error context and the schema entry points. One way:
 * policy.c (files, extends, defaults, printing) calls policy_fields.c (the schema, which
 * defines these) and policy_lists.c; neither calls back into policy.c. */
#ifndef PS_POLICY_IMPL_H
#define PS_POLICY_IMPL_H

#include <stdarg.h>
#include <stddef.h>

#include "policy.h"

struct cJSON;

/* Which file a message is about, and where it goes. */
struct ps_pctx {
	const char *file;
	char *err;
	size_t errlen;
	const char *what;	/* "policy" when NULL; "profile" for a seccomp profile */
	int level;		/* 1 a parent policy, 2 the policy named (0: the built-in defaults) */
};

/* "policy FILE: field FIELD: reason", or "policy FILE: reason" when field is NULL. Returns -1. */
int ps_pfail(const struct ps_pctx *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Apply a policy document (a JSON object) onto p, key by key (policy_fields.c). */
int ps_policy_apply_json(const struct ps_pctx *c, const struct cJSON *root, struct ps_policy *p);

/* Read a JSON file (size-capped, UTF-8, no NUL) or parse text already read: 0 or -1 with
 * c's message (policy.c). */
int ps_policy_read_json(const struct ps_pctx *c, const char *path, struct cJSON **root);
int ps_policy_parse_json(const struct ps_pctx *c, const char *buf, size_t len,
			 struct cJSON **root);

/* "a string", "an array", ... for "expected X, got Y" messages. */
const char *ps_json_type(const struct cJSON *v);

#endif
