/* Served sessions: the routes under /v1/sessions (sessions.c). server.c hands every request
 * whose path starts with /v1/sessions here, after its token check. */
#ifndef PS_SERVE_SESSIONS_H
#define PS_SERVE_SESSIONS_H

#include <stddef.h>
#include <stdio.h>

#include "server.h"

enum { PS_SESSIONS_DEFAULT_MAX = 64 };

struct ps_sessions;

/* The table (and its reaper thread) for cfg's policies and zygotes. NULL: out of memory. */
struct ps_sessions *ps_sessions_new(const struct ps_server_config *cfg);
/* Every live session ended (nothing of it left), the table freed. */
void ps_sessions_free(struct ps_sessions *ss);
/* One request: the HTTP status, *out a malloc'd JSON body. */
unsigned ps_sessions_route(struct ps_sessions *ss, const char *method, const char *url,
			   const char *body, size_t len, char **out);
/* Prometheus lines: sessions live, created, refused, ended; cells run and rolled back. */
void ps_sessions_metrics(struct ps_sessions *ss, FILE *f);

#endif
