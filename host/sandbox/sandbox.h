/* Kernel layers. Each is prepared in the parent (where failing and allocating are fine)
 * and applied in the worker by one phase of worker.c. Child-side functions never use stdio
 * or malloc; they fill a ps_child_err and return -1. */
#ifndef PS_SANDBOX_H
#define PS_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"

struct ps_child_err {
	int err;		/* errno of the failing call */
	char msg[200];		/* "setresuid(65534): Operation not permitted" */
};

void ps_child_err_set(struct ps_child_err *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* strerror(3) text from a fixed table: safe in the child (no locale, no malloc). */
const char *ps_errstr(int err);
/* snprintf for the child (the subset ps_child_err_set knows); returns the length written. */
int ps_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What really held in this worker: the verdict's "sandbox" block. Fixed size: it crosses
 * the status pipe. */
struct ps_held {
	int32_t uid, gid;		/* after the identity phase */
	uint8_t caps_cleared;		/* every capability set empty and locked */
	uint8_t no_new_privs;
	uint8_t not_dumpable;
	uint8_t seccomp;		/* 0 off, else 1 + enum ps_seccomp_action */
	int32_t landlock_abi;		/* 0 = not applied */
	uint32_t namespaces;		/* CLONE_NEW* bits really entered */
	uint8_t cgroup;			/* placed in a per-run cgroup */
	uint8_t scratch_capped;		/* scratch is a size-capped tmpfs */
	uint32_t layers_off;		/* 1 << enum ps_layer, switched off by the caller */
	uint32_t layers_degraded;	/* best-effort layers that could not be applied */
};

/* One fixed-size record on the worker's status pipe (atomic: smaller than PIPE_BUF). */
enum ps_rec_kind {
	PS_REC_PHASE_FAIL = 1,	/* a phase failed: phase, err, msg */
	PS_REC_HELD = 2,	/* every phase done, the snippet starts: held */
	PS_REC_SYSCALL = 3,	/* the seccomp SIGSYS handler: syscall_nr, arch */
	PS_REC_EXIT = 4,	/* a zygote's worker, about to _exit(err): usage; msg the token */
	/* session holders and cells (session/holder.c); msg starts with the session's token */
	PS_REC_CELL_FORKED = 5,	/* the holder forked the cell: phase its pid (the holder's view) */
	PS_REC_CELL_DONE = 6,	/* the cell ended by itself: err its exit code, usage */
	PS_REC_INPUT = 7,	/* the cell called input(): phase 1 = password, msg token+prompt */
	PS_REC_CELL_REAPED = 8,	/* the holder reaped a dead cell: err its wait status, usage */
};

struct ps_status_rec {
	uint32_t kind;
	int32_t phase;		/* index into the worker's phase table */
	int32_t err;
	int32_t syscall_nr;
	uint32_t arch;		/* AUDIT_ARCH_* of the trapped call */
	struct ps_held held;
	int64_t utime_us, stime_us, maxrss_kb;	/* PS_REC_EXIT: getrusage(RUSAGE_SELF) */
	char msg[200];
};

/* --- limits.c: rlimits from a table --- */
enum ps_limits_stage {
	PS_LIMITS_BEFORE_FDS,	/* all but RLIMIT_NOFILE: the worker still holds its parent's fds */
	PS_LIMITS_AFTER_FDS,	/* RLIMIT_NOFILE, once they are closed */
	PS_LIMITS_ALL,
};
int ps_limits_apply(const struct ps_limits *l, bool private_uid, enum ps_limits_stage stage,
		    struct ps_child_err *e);

/* --- identity.c (libcap-ng) --- */
struct ps_identity {
	bool drop_uid;		/* started as real root: switch to uid/gid */
	uid_t uid;
	gid_t gid;
};
void ps_identity_plan(const struct ps_policy *p, unsigned worker_slot, struct ps_identity *out);
int ps_identity_apply(const struct ps_identity *id, struct ps_held *held, struct ps_child_err *e);
/* A parent that forks many workers (a zygote): empty the bounding set once, so that a
 * worker's identity phase finds nothing left to drop there. Nothing changes for the parent,
 * which never execs (the bounding set only limits what an exec can grant); a worker still
 * drops whatever remains and verifies the set empty. */
void ps_identity_drop_bounding(void);
int ps_nnp_apply(struct ps_held *held, struct ps_child_err *e);

/* --- landlock.c --- */
struct ps_landlock;
int ps_landlock_prepare(const struct ps_policy *p, const char *const *ro_paths, size_t n_ro,
			struct ps_landlock **out, char *err, size_t errlen);
/* scratch is opened here, in the child, after any scratch mount. */
int ps_landlock_apply(const struct ps_landlock *ll, const char *scratch, struct ps_held *held,
		      struct ps_child_err *e);
void ps_landlock_free(struct ps_landlock *ll);
int ps_landlock_abi(void);	/* kernel's ABI, 0 if unsupported */

/* --- seccomp.c (libseccomp) + syscall_groups.c --- */
struct ps_filter;
int ps_filter_build(const struct ps_policy *p, struct ps_filter **out, char *err, size_t errlen);
/* status_fd: where the SIGSYS handler writes its ps_status record for PS_SECCOMP_KILL. */
int ps_filter_load(const struct ps_filter *f, int status_fd, struct ps_held *held,
		   struct ps_child_err *e);
/* The same for a session holder: fork allowed (clone without CLONE_THREAD or a namespace
 * flag, and wait4), kill/tgkill to any positive pid (cells are forks: no pid
 * is known in advance). See add_session_rules in seccomp.c. */
int ps_filter_build_session(const struct ps_policy *p, struct ps_filter **out, char *err,
			    size_t errlen);
void ps_filter_free(struct ps_filter *f);
/* A filter built after the fork: the parent sends it, the worker receives it (static storage,
 * no allocation). 0 or -errno / -1 with e. */
int ps_filter_send(const struct ps_filter *f, int fd);
int ps_filter_receive(int fd, const struct ps_filter **out, struct ps_child_err *e);
/* Parent side, for the verdict: the name of a trapped syscall ("execve"; "read (x32)";
 * "syscall 999"). arch is the AUDIT_ARCH_* of the record (0 = native). The text lives in
 * a per-thread buffer until the next call. */
const char *ps_syscall_name(int nr);
const char *ps_syscall_name_arch(int nr, uint32_t arch);
/* Parent side: the name of a native syscall number, or NULL. */
const char *ps_syscall_name(int nr);

/* --- namespaces.c --- */
/* Parent/zygote, once: enter the namespaces that do not change per run (net, ipc, uts; a user
 * namespace first when not root). Returns the CLONE_NEW* bits entered, or -1 with err. */
int ps_ns_enter_static(const struct ps_policy *p, bool best_effort, char *err, size_t errlen);
/* End the PID namespace's init (and with it any survivor) and reap it. _start only asks it
 * to go, so that its teardown overlaps with whatever the caller does before ps_ns_release. */
void ps_ns_release_start(void);
void ps_ns_release(void);
/* fork() that also gives the child its own PID namespace (and mount namespace) when allowed;
 * falls back to a plain fork() where the host refuses them. */
pid_t ps_ns_fork(unsigned long extra_flags);
/* In the child: the CLONE_NEW* bits ps_ns_fork really gave it (0 after the fallback). */
uint32_t ps_ns_fork_flags(void);
/* Parent: can a child mount a tmpfs on dir in a mount namespace of its own? Tried once, in
 * a throwaway child. */
bool ps_ns_probe_scratch_mount(const char *dir);
/* Child: size-capped tmpfs on scratch, owned by uid:gid (needs a mount namespace). */
int ps_ns_mount_scratch(const char *scratch, uint64_t bytes, uid_t uid, gid_t gid,
			struct ps_held *held, struct ps_child_err *e);

#endif
