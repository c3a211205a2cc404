/* The HTTP front of `pysnip serve` (libmicrohttpd, a thread per connection). It never runs
 * Python and never initialises the interpreter: it parses and checks requests, admits them
 * against the worker pool and the bounded queue, and hands each run to its policy's zygote. */
#ifndef PS_SERVER_H
#define PS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"
#include "run/auditlog.h"
#include "run/worker.h"
#include "pool.h"

/* A batch's answer is built whole (its status is 500 when a run failed in the host), so it
 * is bounded before any input runs: its inputs' output, escaped at worst 6 bytes a byte
 * (\u0001), may not pass PS_SERVE_BATCH_ANSWER_MAX, nor its inputs' wall limits together
 * PS_SERVE_BATCH_WALL_MAX_MS (the time it holds a worker and a connection). The rest of a
 * verdict (exception reports) is counted as it comes: past the cap, the batch stops. */
enum {
	PS_SERVE_BODY_MAX = 16 << 20,
	PS_SERVE_BATCH_MAX = 256,
	PS_SERVE_BATCH_ANSWER_MAX = 64 << 20,
	PS_SERVE_BATCH_WALL_MAX_MS = 300 * 1000,
	PS_SERVE_ESCAPED_MAX = 6,	/* bytes of JSON per byte of output, at worst */
};

struct ps_server_config {
	unsigned workers;		/* concurrent runs */
	unsigned queue;			/* requests waiting for a worker before 429 */
	const char *token;		/* bearer token, or NULL: no auth */
	size_t body_max;		/* larger bodies get 413 */
	int listen_fd;			/* bound and listening; the server owns it */
	unsigned max_conns;		/* connections at once (a descriptor budget) */
	unsigned max_untrusted;		/* connections no request of which passed auth yet */
	unsigned untrusted_ms;		/* ... each cut this long after it was accepted */
	struct ps_policy *policies;	/* served policies; the first is the default */
	struct ps_zygote *zygotes;	/* one per policy, same order */
	size_t n;
	struct ps_auditlog *audit;	/* --audit-log, or NULL */
	const char *token_id;		/* the token's one-way id for the log, or NULL */
	unsigned max_sessions;		/* live sessions before 429 (0: the default) */
};

struct ps_server;

/* server_request.c: one POST /v1/exec or /v1/batch body, checked. */
struct ps_job {
	size_t policy;		/* index into the served policies */
	const char *code;
	size_t code_len;
	const char **stdins;	/* one run per entry; a NULL entry: empty stdin */
	size_t n;
	struct ps_limits limits;	/* the policy's, tightened by the request */
	bool batch;
	bool stdins_owned;
	void *root;		/* the parsed document the strings point into */
	struct ps_file_in *files;	/* "files": each at input/NAME, decoded */
	size_t n_files;
};

struct ps_bad {
	char field[64];		/* "limits.wall", "stdin[2]", "" for the body itself */
	char reason[512];
};

/* 0 with j filled (free with ps_job_free even on failure), or -1 with b filled. */
int ps_job_parse(const char *body, size_t len, bool batch, const struct ps_policy *policies,
		 size_t n, struct ps_job *j, struct ps_bad *b);
void ps_job_free(struct ps_job *j);

/* Start serving in background threads. 0, or -1 with err. */
int ps_server_start(const struct ps_server_config *cfg, struct ps_server **out, char *err,
		    size_t errlen);
/* SIGTERM: stop accepting, answer 503 to new requests, let running ones finish, stop. */
void ps_server_drain(struct ps_server *s);
void ps_server_free(struct ps_server *s);

#endif
