/* Zygotes for `pysnip serve`: one process per served policy that holds the initialised
 * interpreter and the prepared worker, started by fork+exec of our own binary (the front is
 * threaded; it never forks without exec and never initialises Python).
 *
 * Protocol. The zygote keeps `spare` workers forked ahead of demand, each with every phase
 * that does not depend on the request applied, blocked reading its fd 0 (worker.c,
 * phase_request). For each it sends the front, over a SOCK_SEQPACKET control socket, a
 * struct ps_zworker and (SCM_RIGHTS) the parent's ends of the worker's channels: fd 0's write
 * end, stdout, stderr, status, report, the worker's pidfd, and a "life" pipe on which the
 * zygote writes a struct ps_reaped once it reaped the worker. The front keeps them in an idle
 * pool. A policy with matplotlib also gets up to two rehearsed spares (ps_zworker.rehearsed),
 * which draw a figure before they block and then say PS_REC_READY on their status pipe; the
 * front hands those to the snippets that name the libraries (pool.c, pick). A request
 * takes the oldest fitting one, tells the zygote (PS_ZCMD_CLAIM: it forks a
 * replacement), writes a struct ps_wreq, the code and the stdin to the worker's fd 0 and
 * supervises the run in its own thread (ps_supervise: caps, wall clock, kill through the
 * pidfd), then renders the verdict. So a request costs no fork on its path and request data
 * never enters the zygote: nothing of one request can be in the memory of a worker forked
 * later. A request whose limits change what the phases applied (the scratch size; any limit
 * when runs get a cgroup) asks for a worker forked for it (PS_ZCMD_FORK, with a tag).
 * A zygote that dies takes its workers with it (PDEATHSIG): runs in flight get
 * internal_error; requests that hold no worker yet wait for the restarted zygote. */
#ifndef PS_ZYGOTE_H
#define PS_ZYGOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "run/worker.h"
#include "session/session.h"	/* struct ps_session_limits, in a command */

#define PS_ZWORKER_MAGIC 0x77727a70u	/* "pzrw" */
#define PS_ZCMD_MAGIC 0x63727a70u	/* "pzrc" */

/* zygote -> front, with PS_ZWORKER_FDS descriptors: in, out, err, status, report, pidfd, life */
enum { PS_ZWORKER_FDS = 7 };

/* The zygote's end of its control socket (a SOCK_SEQPACKET pair made by the front). */
enum { PS_ZYGOTE_CTL_FD = 3 };
struct ps_zworker {
	uint32_t magic;
	uint32_t slot;
	uint64_t serial;
	uint64_t tag;		/* 0: a spare for the pool; else forked for the PS_ZCMD_FORK with it */
	int32_t pid;		/* in the front's PID namespace (the zygote's) */
	uint32_t rehearsed;	/* a spare that rehearses before its request (PS_REC_READY) */
	char token[40];		/* the run's report token */
};

/* PS_ZCMD_SESSION: a served session. The zygote forks a child that becomes its session host
 * (session/session.h, ps_session_host_run: no interpreter start) and answers with a
 * struct ps_zworker whose tag is the command's and PS_ZSESSION_FDS descriptors: the socket
 * to the session host, its pidfd. The zygote reaps it. */
enum ps_zcmd_kind { PS_ZCMD_CLAIM = 1, PS_ZCMD_FORK = 2, PS_ZCMD_SESSION = 3 };
enum { PS_ZSESSION_FDS = 2 };
#define PS_ZTAG_SESSION (1ull << 63)	/* in the tag of a PS_ZCMD_SESSION's answer */

/* front -> zygote */
struct ps_zcmd {
	uint32_t magic;
	uint32_t kind;
	uint64_t serial;	/* CLAIM: the spare taken */
	uint64_t tag;		/* FORK: names the worker in the answer */
	struct ps_limits limits;	/* FORK: what its phases apply; SESSION: the cells' */
	struct ps_session_limits session;	/* SESSION */
	int32_t slot;			/* SESSION: a uid of the policy's range, -1: any free */
};

/* How many rehearsed spares a zygote of policy p keeps beside its `spare` plain ones, where
 * its spares' set-up is background work (zygote.c): up to two, for a policy with matplotlib;
 * each holds ~15 MB of its own. The front budgets their descriptors by it (cmd_serve.c). */
static inline unsigned ps_zygote_rehearsed_spares(const struct ps_policy *p, unsigned spare)
{
	if (!ps_strlist_has(&p->modules_allow, "matplotlib"))
		return 0;
	return spare < 2 ? spare : 2;
}

/* `pysnip zygote`: the internal command pysnip-serve starts for each served policy. */
int ps_cmd_zygote(int argc, char **argv);

#endif
