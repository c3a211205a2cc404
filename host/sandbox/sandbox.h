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
	/* a served spare forked to rehearse (worker.c, phase_request): its warm-up is done and
	 * it waits for its request; the front hands such a spare only a ready one */
	PS_REC_READY = 9,
};

struct ps_status_rec {
	uint32_t kind;
	int32_t phase;		/* index into the worker's phase table */
	int32_t err;
	int32_t syscall_nr;
	uint32_t arch;		/* AUDIT_ARCH_* of the trapped call */
	struct ps_held held;
	/* PS_REC_EXIT: getrusage(RUSAGE_SELF); PS_REC_HELD of a spare: the CPU it used before its
	 * request came (its phases, a rehearsal), which is not the run's */
	int64_t utime_us, stime_us, maxrss_kb;
	char msg[200];
};

/* --- limits.c: rlimits from a table --- */
enum ps_limits_stage {
	PS_LIMITS_BEFORE_FDS,	/* all but RLIMIT_NOFILE: the worker still holds its parent's fds */
	PS_LIMITS_AFTER_FDS,	/* RLIMIT_NOFILE, once they are closed */
	PS_LIMITS_ALL,
};
/* Worker: from now on a storm of failing mmaps (a library retrying forever under RLIMIT_AS)
 * ends the run as out of memory instead of spinning (mmap_guard.c). */
void ps_mmap_guard_arm(void);

int ps_limits_apply(const struct ps_limits *l, bool private_uid, enum ps_limits_stage stage,
		    struct ps_child_err *e);

/* --- identity.c (libcap-ng) --- */
struct ps_identity {
	bool drop_uid;		/* started as real root: switch to uid/gid */
	bool per_process;	/* uid/gid are bases: the worker adds its pid (ps_identity_bind_pid) */
	uid_t uid;
	gid_t gid;
};
void ps_identity_plan(const struct ps_policy *p, unsigned worker_slot, struct ps_identity *out);
/* Child, first thing: a per-process identity becomes uid + P, gid + P, P our pid as the host's
 * /proc names it (a pid names one live process, so no live worker shares the uid). */
int ps_identity_bind_pid(struct ps_identity *id, struct ps_child_err *e);
/* Parent: a per-process range must belong to nobody: no account or group (/etc/passwd,
 * /etc/group) and no subordinate range (/etc/subuid, /etc/subgid) may fall in it. 0, or -1
 * with err naming the file and the entry. */
int ps_identity_check_range(const struct ps_policy *p, char *err, size_t errlen);
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
/* The worker's status descriptor (run/worker_int.h), where the SIGSYS handler reports: a
 * profile that denies write(2) still lets the handler write there. */
enum { PS_SECCOMP_REPORT_FD = 3 };
int ps_filter_build(const struct ps_policy *p, struct ps_filter **out, char *err, size_t errlen);
/* The same, saying what of a seccomp profile the filter did not take as written (NULL: no
 * report). Each list holds one line an entry. */
struct ps_filter_report {
	struct ps_strlist overridden;	/* "ptrace (syscalls[2]): never allowed by pysnip" */
	struct ps_strlist unknown;	/* names libseccomp does not know: ignored, as runc does */
	struct ps_strlist foreign;	/* syscalls of other architectures only: ignored */
};
int ps_filter_build_report(const struct ps_policy *p, struct ps_filter **out,
			   struct ps_filter_report *rep, char *err, size_t errlen);
void ps_filter_report_free(struct ps_filter_report *r);
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

/* The worker's end of the channel its learn-mode listener goes over (worker.c keeps it open
 * through its fd phase; ps_filter_load sends the listener and closes it). */
enum { PS_LEARN_FD = 5 };
/* Allowed only through pysnip's own argument checks (ioctl, clone, kill, ...). */
bool ps_filter_is_arg_checked(const char *name);
/* Does the filter carry a learn-mode listener to hand over? */
bool ps_filter_learns(const struct ps_filter *f);
/* May the worker make itself SCHED_IDLE as it exits (no filter, or one that allows it)? */
bool ps_filter_idle_exit(const struct ps_filter *f);

/* --- notify.c: pysnip learn's supervisor (seccomp user notification, libseccomp) --- */
enum { PS_NOTIFY_MAX_NR = 512 };
enum ps_notify_refusal {
	PS_NOTIFY_RAN,		/* went on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) */
	PS_NOTIFY_ARGS,		/* failed (EPERM): arguments outside pysnip's own check */
	PS_NOTIFY_NEVER,	/* failed (EPERM): a syscall pysnip never allows */
};
struct ps_notify_report {
	uint32_t count[PS_NOTIFY_MAX_NR];	/* notifications by native syscall number */
	uint8_t refused[PS_NOTIFY_MAX_NR];	/* enum ps_notify_refusal, the worst seen */
	bool threads;			/* clone(CLONE_THREAD) went on */
	bool got_listener;		/* the worker handed its listener over */
	char error[200];
};
struct ps_notify;
/* Can this kernel and libseccomp notify (API level 5, SECCOMP_RET_USER_NOTIF available)? */
bool ps_notify_available(void);
/* Before the supervisor forks the runner (the process that runs the worker). 0 or -errno. */
int ps_notify_new(struct ps_notify **out);
void ps_notify_runner_side(struct ps_notify *n);	/* each, after that fork */
void ps_notify_supervisor_side(struct ps_notify *n);
/* Runner, after the worker's fork: send channel (its end of the worker's PS_LEARN_FD) up to
 * the supervisor. 0 or -errno. */
int ps_notify_start(struct ps_notify *n, int channel);
/* Supervisor: poll this descriptor (POLLIN) and pass what came to ps_notify_step, until it
 * is -1 (the worker is gone). */
int ps_notify_fd(const struct ps_notify *n);
void ps_notify_step(struct ps_notify *n, short revents);
const struct ps_notify_report *ps_notify_report(const struct ps_notify *n);
void ps_notify_free(struct ps_notify *n);

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
/* --- mounts.c: the worker's mount namespace --- */
/* Parent: can a child mount a tmpfs on dir in a mount namespace of its own? Tried once, in
 * a throwaway child. */
bool ps_ns_probe_scratch_mount(const char *dir);
/* Child: size-capped tmpfs on scratch, owned by uid:gid (needs a mount namespace). */
int ps_ns_mount_scratch(const char *scratch, uint64_t bytes, uid_t uid, gid_t gid,
			struct ps_held *held, struct ps_child_err *e);
/* Child, in its mount namespace, after the scratch mount: every mount of the host's tree
 * read-only but scratch and the rw paths (no write, chmod, chown, utimes or xattr change
 * outside them, whatever the uid: Landlock has no right for metadata), and a /proc of our
 * own PID namespace (own_pidns) or none. scratch_mounted: scratch is its own tmpfs. */
int ps_ns_seal_view(const char *scratch, bool scratch_mounted, const char *const *rw, size_t n_rw,
		    bool own_pidns, struct ps_child_err *e);

#endif
