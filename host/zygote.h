/* Zygotes for `pysnip serve`: one process per served policy that holds the initialised
 * interpreter and the prepared worker, started by fork+exec of our own binary (the front is
 * threaded; it never forks without exec and never initialises Python).
 *
 * Protocol. The front and a zygote share a SOCK_SEQPACKET control socket. The zygote keeps a few
 * "runner" children forked ahead of demand, each blocked in recvmsg() on that socket. For a
 * request the front makes a fresh socketpair and passes one end over the control socket
 * (SCM_RIGHTS); exactly one idle runner receives it, tells the zygote (which forks a
 * replacement when it ends), acknowledges it with one byte, reads the request frame,
 * runs ps_worker_run (the one fork on the critical path), writes the rendered verdict back and
 * _exits. A request no runner acknowledged (its zygote died) is sent again to the restarted
 * zygote; one acknowledged gets internal_error if its runner dies. The zygote never reads
 * request data and never waits for a run. A zygote that dies takes its runners and their
 * workers with it (PDEATHSIG), so the front sees EOF and answers internal_error. */
#ifndef PS_ZYGOTE_H
#define PS_ZYGOTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

#define PS_ZREQ_MAGIC 0x71727a70u	/* "pzrq" */
#define PS_ZRESP_MAGIC 0x73727a70u	/* "pzrs" */
#define PS_ZACK 'A'			/* runner -> front: "this request is mine" */

/* Front -> runner, on the request's socket; code_len bytes of code and stdin_len of stdin follow. */
struct ps_zreq {
	uint32_t magic;
	uint32_t slot;
	uint64_t code_len;
	uint64_t stdin_len;
	struct ps_limits limits;
};

/* Runner -> front; len bytes of verdict JSON follow. */
struct ps_zresp {
	uint32_t magic;
	int32_t status;		/* enum ps_status of the verdict, -1 unknown */
	uint64_t len;
};

/* The front's handle on one zygote. */
struct ps_zygote {
	char policy[256];	/* NAME or PATH as given to `serve --policy` */
	char name[64];		/* the policy's name, for messages and the scratch base */
	char tmp_root[200];	/* the server's scratch root */
	char tmp_dir[300];	/* this generation's scratch base (the zygote's TMPDIR) */
	unsigned generation;
	uint32_t layers_off;
	unsigned runners;	/* runners the zygote keeps alive (forked ahead, idle or busy) */
	pthread_mutex_t mu;	/* guards pid, ctl */
	pid_t pid;		/* -1 when not running */
	int ctl;		/* front's end of the control socket, -1 when not running */
	unsigned restarts;
};

void ps_zygote_init(struct ps_zygote *z, const char *policy, const char *name,
		    const char *tmp_root, uint32_t layers_off, unsigned runners);
/* Spawn the zygote and wait until it reports ready (or its error). 0, or -1 with err. */
int ps_zygote_start(struct ps_zygote *z, char *err, size_t errlen);
/* Kill the zygote (its runners and workers die with it), reap it, remove its scratch base. */
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

/* Run one request on this zygote: blocks until the verdict, EOF (a dead zygote or runner) or
 * timeout_ms. Returns 0 with a->json, or -1 with a->error. Thread-safe. */
int ps_zygote_call(struct ps_zygote *z, const struct ps_zreq *h, const char *code,
		   const char *stdin_data, uint64_t timeout_ms, struct ps_zanswer *a);

#endif
