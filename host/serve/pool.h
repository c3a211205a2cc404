/* The front's handle on its zygotes (pool.c): start, restart, claim a spare, supervise its run,
 * a served session. The wire protocol both sides speak is zygote/zygote.h. */
#ifndef PS_POOL_H
#define PS_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "run/worker.h"
#include "session/session.h"
#include "zygote/zygote.h"

struct ps_zidle {
	struct ps_zworker w;
	int fd[PS_ZWORKER_FDS];
};

/* The front's handle on one zygote. */
struct ps_zygote {
	char policy[256];	/* NAME or PATH as given to `serve --policy` */
	char name[64];		/* the policy's name, for messages and the scratch base */
	char tmp_root[200];	/* the server's scratch root */
	char tmp_dir[300];	/* this generation's scratch base (the zygote's TMPDIR) */
	unsigned generation;
	uint32_t layers_off;
	unsigned spare;		/* workers the zygote keeps forked ahead of demand */
	pthread_mutex_t mu;	/* guards everything below */
	pthread_cond_t cv;	/* the pool changed */
	pid_t pid;		/* -1 when not running */
	int ctl;		/* front's end of the control socket, -1 when not running */
	bool reader_on;
	pthread_t reader;	/* receives workers into the pool; owns ctl */
	struct ps_zidle *idle;
	size_t n_idle, cap_idle;
	uint64_t next_tag;
	uint64_t dropped[8];	/* tags of workers forked for a request that the front lost */
	unsigned n_dropped;
	unsigned lost;		/* workers the front could not receive */
	unsigned restarts;
};

void ps_zygote_init(struct ps_zygote *z, const char *policy, const char *name,
		    const char *tmp_root, uint32_t layers_off, unsigned spare);
/* Spawn the zygote and wait until it reports ready (or its error). 0, or -1 with err. */
int ps_zygote_start(struct ps_zygote *z, char *err, size_t errlen);
/* Kill the zygote (its workers die with it), reap it, remove its scratch base. */
void ps_zygote_stop(struct ps_zygote *z);
/* Kill without reaping (whoever waits for children reaps it, then calls ps_zygote_reaped). */
void ps_zygote_kill(struct ps_zygote *z);
/* The zygote was reaped: forget it and remove its scratch base (its workers die with it). */
void ps_zygote_reaped(struct ps_zygote *z);
void ps_zygote_cleanup(struct ps_zygote *z);

struct ps_zanswer {
	char *json;		/* malloc'd verdict, or NULL with error set */
	size_t len;
	int status;		/* enum ps_status, -1 unknown */
	char error[512];
};

/* Run r on a worker of this zygote (p: its policy) and render the verdict: 0 with a->json
 * (an internal_error verdict when the zygote died mid-run), or -1 with a->error when no
 * worker could be had. Thread-safe. */
int ps_zygote_call(struct ps_zygote *z, const struct ps_policy *p, const struct ps_run *r,
		   struct ps_zanswer *a);

/* A served session on this zygote (a fork of it), limits the cells' (the policy's, possibly
 * tightened). 0 with *out (session/session.h), or -1 with err. Thread-safe. */
int ps_zygote_session(struct ps_zygote *z, const struct ps_limits *limits,
		      const struct ps_session_limits *sl, struct ps_session **out, char *err,
		      size_t errlen);

#endif
