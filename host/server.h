/* The HTTP front of `pysnip serve` (libmicrohttpd, a thread per connection). It never runs
 * Python and never initialises the interpreter: it parses and checks requests, admits them
 * against the worker pool and the bounded queue, and hands each run to its policy's zygote. */
#ifndef PS_SERVER_H
#define PS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "zygote.h"

enum { PS_SERVE_BODY_MAX = 16 << 20, PS_SERVE_BATCH_MAX = 256 };

struct ps_server_config {
	unsigned workers;		/* concurrent runs */
	unsigned queue;			/* requests waiting for a worker before 429 */
	const char *token;		/* bearer token, or NULL: no auth */
	size_t body_max;		/* larger bodies get 413 */
	int listen_fd;			/* bound and listening; the server owns it */
	struct ps_policy *policies;	/* served policies; the first is the default */
	struct ps_zygote *zygotes;	/* one per policy, same order */
	size_t n;
};

struct ps_server;

/* Start serving in background threads. 0, or -1 with err. */
int ps_server_start(const struct ps_server_config *cfg, struct ps_server **out, char *err,
		    size_t errlen);
/* SIGTERM: stop accepting, answer 503 to new requests, let running ones finish, stop. */
void ps_server_drain(struct ps_server *s);
void ps_server_free(struct ps_server *s);

#endif
