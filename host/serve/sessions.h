/* Served sessions: the routes under /v1/sessions (sessions.c). server.c hands every request
 * whose path starts with /v1/sessions here, after its token check. */
#ifndef PS_SERVE_SESSIONS_H
#define PS_SERVE_SESSIONS_H

#include <stddef.h>
#include <stdio.h>

#include "server.h"
#include "session/session.h"

enum { PS_SESSIONS_DEFAULT_MAX = 64 };

struct ps_sessions;

/* The table (and its reaper thread) for cfg's policies and zygotes. NULL: out of memory. */
struct ps_sessions *ps_sessions_new(const struct ps_server_config *cfg);
/* Every live session ended (nothing of it left), the table freed. */
void ps_sessions_free(struct ps_sessions *ss);
/* One request: the HTTP status, *out a malloc'd JSON body. */
unsigned ps_sessions_route(struct ps_sessions *ss, const char *method, const char *url,
			   const char *body, size_t len, char **out);
/* sessions_request.c: the bodies, parsed and checked apart from the table (0, or -1 with b
 * naming the field; "" for the body itself). POST /v1/sessions: */
struct ps_session_create {
	size_t policy;			/* index into the served policies */
	struct ps_limits limits;	/* the cells': the policy's, tightened by the request */
	struct ps_session_limits session;
};
int ps_sessions_parse_create(const struct ps_policy *policies, size_t n, const char *body,
			     size_t len, struct ps_session_create *c, struct ps_bad *b);
/* POST /v1/sessions/ID/exec: the code and the limits as JSON text for ps_session_exec (NULL:
 * the session's). Free with ps_sessions_cell_free after a 0. */
struct ps_session_cell {
	char *code;
	size_t len;
	char *limits;
};
int ps_sessions_parse_exec(const char *body, size_t len, struct ps_session_cell *c,
			   struct ps_bad *b);
void ps_sessions_cell_free(struct ps_session_cell *c);

/* Prometheus lines: sessions live, created, refused, ended; cells run and rolled back. */
void ps_sessions_metrics(struct ps_sessions *ss, FILE *f);

#endif
