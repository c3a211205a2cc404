/* Internal to worker.c (the worker's phases) and worker_spawn.c (the parent's side): the
 * state one forked worker carries through its phases. */
#ifndef PS_WORKER_INT_H
#define PS_WORKER_INT_H

#include <sys/time.h>
#include <unistd.h>

#include "worker.h"

/* Fixed descriptor numbers inside the worker. */
enum { CHILD_STATUS_FD = 3, CHILD_REPORT_FD = 4, CHILD_FIRST_FREE_FD = 5 };
_Static_assert((int)CHILD_STATUS_FD == (int)PS_SECCOMP_REPORT_FD, "seccomp.c lets its handler write here");
_Static_assert((int)CHILD_FIRST_FREE_FD == (int)PS_LEARN_FD, "learn's channel: the first free fd");

struct ps_child {
	const struct ps_worker *w;
	const struct ps_limits *limits;	/* applied by the phases (a request may lower them) */
	bool await_request;		/* forked ahead of demand: the code comes on fd 0 */
	struct timeval ahead_utime, ahead_stime;	/* its CPU when the request came */
	const char *code;
	size_t code_len;
	const struct ps_file_in *inputs;	/* exec's, placed in phase_scratch */
	size_t n_inputs;
	bool want_output;
	const char *scratch;
	pid_t parent;
	int in, out, err, status, report;	/* child ends before phase_stdio */
	int filter_rx;			/* a deferred filter arrives here (-1: none) */
	bool learn_fd;			/* learn: filter_rx stays open as PS_LEARN_FD */
	const struct ps_filter *filter;	/* what phase_seccomp loads */
	struct ps_identity id;
	const char *token;
	struct ps_held held;
	struct ps_child_err e;
};

/* Does a worker mount a tmpfs on its scratch (phase_scratch)? Namespaces on, and either
 * namespaces entered by the parent or root's privilege to mount. */
static inline bool ps_worker_mounts_scratch(const struct ps_worker *w)
{
	return !(w->layers_off & (1u << PS_LAYER_NAMESPACES)) && (w->ns_static || getuid() == 0);
}

/* The child after fork: every phase in order, then the snippet; never returns. */
__attribute__((noreturn)) void ps_worker_child_main(struct ps_child *c);

#endif
