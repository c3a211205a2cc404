/* The worker: a forked child that applies the sandbox phase by phase, then runs the snippet.
 * The checklist is the phase table below; each phase says why it sits where it does. */
#include "worker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procstat.h"
#include "files.h"
#include "sandbox/cgroup.h"
#include "python/interp.h"
#include "util/util.h"


static bool layer_on(const struct ps_child *c, enum ps_layer l)
{
	return !(c->w->layers_off & (1u << l));
}

/* A layer's phase failed: fatal when required, noted when best-effort. */
static int layer_failed(struct ps_child *c, enum ps_layer l)
{
	if (c->w->policy->layers[l] == PS_LAYER_BEST_EFFORT) {
		c->held.layers_degraded |= 1u << l;
		return 0;
	}
	return -1;
}

/* Give up the caller's controlling terminal, if it has one. */
static int drop_controlling_tty(struct ps_child_err *e)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return 0; /* ENXIO: none; ENOENT etc.: no way to reach one either */
	if (ioctl(fd, TIOCNOTTY) < 0) {
		ps_child_err_set(e, errno, "ioctl(/dev/tty, TIOCNOTTY): %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Die with the parent, lead our own process group (so the supervisor can kill it whole),
 * and start from default signal dispositions: first, before anything can block. */
static int phase_lifecycle(struct ps_child *c)
{
	sigset_t all;

	/* Forked ahead of demand: the phases are background work until a request claims us, at
	 * the nice value the zygote forked us with (zygote.c, fork_worker). Not set again here:
	 * the claim may have come first and put it back to 0. */
	if (c->await_request)
		prctl(PR_SET_NAME, "pysnip-worker");
	if (c->w->init_in_child) {
		char err[sizeof(c->e.msg)];
		int ret;

		/* A one-shot run is a fork of `pysnip exec`: its stack still holds the caller's
		 * environment and arguments (tokens, paths). Overwritten, not just unlinked:
		 * native code can read its own stack. (A zygote did this once for its workers.) */
		if ((ret = ps_procstat_scrub_self(true)) < 0) {
			ps_child_err_set(&c->e, -ret, "scrubbing the environment (/proc/self/stat): %s",
					 ps_errstr(-ret));
			return -1;
		}
		if (ps_interp_init(c->w->init_in_child, err, sizeof(err)) < 0) {
			ps_child_err_set(&c->e, EINVAL, "%s", err);
			return -1;
		}
	} else {
		char err[sizeof(c->e.msg)];

		if (ps_interp_after_fork(err, sizeof(err)) < 0) {
			ps_child_err_set(&c->e, EINVAL, "%s", err);
			return -1;
		}
	}
	/* Before anything uses the identity (the scratch tmpfs's owner, the uid drop). */
	if (ps_identity_bind_pid(&c->id, &c->e) < 0)
		return -1;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		ps_child_err_set(&c->e, errno, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
		return -1;
	}
	if (getppid() != c->parent && c->parent != 0 && getppid() != 0) {
		ps_child_err_set(&c->e, ESRCH, "parent %d exited before the worker started", c->parent);
		return -1;
	}
	/* A one-shot run's worker gets a kernel session of its own: its caller's is a person's
	 * shell, whose stopped jobs any member may SIGCONT whatever its uid. A zygote's worker
	 * or a session's holder only a process group in its host's session: setsid() also
	 * starts a scheduler autogroup (kernel.sched_autogroup_enabled, Debian's default), in
	 * which a worker's nice and SCHED_IDLE weigh only against its own group and the group
	 * against the front and its callers as an equal: a replaced session holder's teardown
	 * or a spare's set-up then holds up the request it was to give way to (SECURITY.md,
	 * "Process groups and kernel sessions"; the session filter keeps SIGCONT in the
	 * group). */
	bool own_session = c->w->init_in_child;

	if (own_session ? setsid() < 0 : setpgid(0, 0) < 0) {
		ps_child_err_set(&c->e, errno, "%s(): %s", own_session ? "setsid" : "setpgid",
				 strerror(errno));
		return -1;
	}
	/* What a new session gives besides: no controlling terminal. Given up here (TIOCNOTTY
	 * lets a member that is not the leader go); not a session leader, the worker cannot
	 * take one again (TIOCSCTTY; setsid is not in the seccomp filter). */
	if (!own_session && drop_controlling_tty(&c->e) < 0)
		return -1;
	/* Python's own start-up ignores SIGPIPE and SIGXFSZ so that they surface as
	 * BrokenPipeError and EFBIG; keep that, default the rest. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, sig == SIGPIPE || sig == SIGXFSZ ? SIG_IGN : SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	return 0;
}

/* Pipes onto the fixed descriptors: the snippet's stdio is 0-2, our channels 3-4.
 * Early, so that every later phase can report on the status channel. */
static int phase_stdio(struct ps_child *c)
{
	int want[] = { c->in, c->out, c->err, c->status, c->report };

	if (c->filter_rx >= 0 && (c->filter_rx = fcntl(c->filter_rx, F_DUPFD_CLOEXEC, 16)) < 0) {
		ps_child_err_set(&c->e, errno, "fcntl(filter pipe, F_DUPFD): %s", strerror(errno));
		return -1;
	}
	/* Move every source above the target range first so dup2 can't clobber one. */
	for (size_t i = 0; i < PS_ARRAY_LEN(want); i++) {
		int fd = fcntl(want[i], F_DUPFD_CLOEXEC, 16);

		if (fd < 0) {
			ps_child_err_set(&c->e, errno, "fcntl(%d, F_DUPFD): %s", want[i], strerror(errno));
			return -1;
		}
		want[i] = fd;
	}
	for (int i = 0; i < (int)PS_ARRAY_LEN(want); i++) {
		if (dup2(want[i], i) < 0) {
			ps_child_err_set(&c->e, errno, "dup2(%d, %d): %s", want[i], i, strerror(errno));
			return -1;
		}
	}
	c->status = CHILD_STATUS_FD;
	return 0;
}

/* The rest of the host's tree read-only (Landlock can't stop chmod, chown or utimes) and
 * a /proc of the workers' own PID namespace. */
static int seal_view(struct ps_child *c, bool scratch_mounted)
{
	const struct ps_strlist *wp = &c->w->policy->write_paths;

	return ps_ns_seal_view(c->scratch, scratch_mounted, (const char *const *)wp->items, wp->n,
			       (c->w->ns_static & CLONE_NEWPID) != 0, &c->e);
}

/* What the run finds in its scratch: matplotlib's font list where the policy allows it, the
 * caller's inputs, an output/ directory. A served worker's come with its request
 * (phase_request), its output/ here. */
static int phase_scratch_files(struct ps_child *c)
{
	uid_t uid = c->id.drop_uid ? c->id.uid : getuid();
	gid_t gid = c->id.drop_uid ? c->id.gid : getgid();

	const struct ps_policy *p = c->w->policy;
	bool bind = (c->held.namespaces & CLONE_NEWNS) != 0;

	if (ps_strlist_has(&p->modules_allow, "matplotlib") &&
	    ps_files_seed_mpl(ps_mpl_cache_dir(), uid, gid, &c->e) < 0)
		return -1;
	if (ps_files_place_inputs(c->inputs, c->n_inputs, bind, uid, gid, &c->e) < 0)
		return -1;
	/* where files are wanted back, or a library policy's run (whose jobs make files) */
	if ((c->want_output || c->n_inputs || p->python_paths.n) &&
	    ps_files_make_output(uid, gid, &c->e) < 0)
		return -1;
	return 0;
}

/* The scratch directory becomes a size-capped tmpfs and the cwd. Needs mount privileges,
 * so it comes before the identity drop. A zygote's shared scratch path (ps_worker.
 * shared_scratch) is only a mountpoint: there the tmpfs is never optional. */
static int phase_scratch(struct ps_child *c)
{
	bool shared = c->w->shared_scratch[0] != '\0';

	if (layer_on(c, PS_LAYER_NAMESPACES)) {
		uid_t uid = c->id.drop_uid ? c->id.uid : getuid();
		gid_t gid = c->id.drop_uid ? c->id.gid : getgid();

		/* ps_ns_fork falls back to a plain fork where the host refuses a mount namespace. */
		c->held.namespaces |= ps_ns_fork_flags();
		if (!(ps_ns_fork_flags() & CLONE_NEWNS)) {
			ps_child_err_set(&c->e, EPERM, "clone(CLONE_NEWNS): refused by the host");
			if (layer_failed(c, PS_LAYER_NAMESPACES) < 0)
				return -1;
		}
		bool mounted = ps_worker_mounts_scratch(c->w);

		if (mounted && ps_ns_mount_scratch(c->scratch, c->limits->scratch_bytes, uid, gid,
						   &c->held, &c->e) < 0) {
			mounted = false;
			if (shared || layer_failed(c, PS_LAYER_NAMESPACES) < 0)
				return -1;
		}
		if ((ps_ns_fork_flags() & CLONE_NEWNS) && seal_view(c, mounted) < 0 &&
		    layer_failed(c, PS_LAYER_NAMESPACES) < 0)
			return -1;
	}
	/* A directory, not a tmpfs of our own: it must be our uid's (a per-process uid was not
	 * known to the parent that made it). */
	if (!c->held.scratch_capped && c->id.drop_uid && !shared &&
	    chown(c->scratch, c->id.uid, c->id.gid) < 0) {
		ps_child_err_set(&c->e, errno, "chown(%s, %u): %s", c->scratch, (unsigned)c->id.uid,
				 strerror(errno));
		return -1;
	}
	if (chdir(c->scratch) < 0) {
		ps_child_err_set(&c->e, errno, "chdir(%s): %s", c->scratch, strerror(errno));
		return -1;
	}
	if (!shared)	/* the zygote set its shared path (ps_interp_begin_shared) */
		ps_interp_set_scratch(c->scratch);
	return phase_scratch_files(c);
}

/* rlimits only ever lower, so they need no privilege; before the identity drop so a
 * private uid's RLIMIT_NPROC is in place when that uid comes to exist. */
static int phase_limits(struct ps_child *c)
{
	ps_mmap_guard_arm();
	return ps_limits_apply(c->limits, c->id.drop_uid, PS_LIMITS_BEFORE_FDS, &c->e);
}

/* Credentials before the filter, so the filter needn't allow setresuid. */
static int phase_identity(struct ps_child *c)
{
	if (!layer_on(c, PS_LAYER_IDENTITY)) {
		c->held.uid = (int32_t)getuid();
		c->held.gid = (int32_t)getgid();
		return 0;
	}
	if (ps_identity_apply(&c->id, &c->held, &c->e) < 0)
		return layer_failed(c, PS_LAYER_IDENTITY);
	return 0;
}

/* no_new_privs: required by unprivileged Landlock and seccomp, and stops setuid gains. */
static int phase_nnp(struct ps_child *c)
{
	return ps_nnp_apply(&c->held, &c->e);
}

static int phase_landlock(struct ps_child *c)
{
	if (!c->w->landlock)
		return 0;
	/* "." is the scratch tmpfs: phase_scratch entered it while still privileged, so the
	 * worker's uid needn't be able to walk the path from / to it. */
	if (ps_landlock_apply(c->w->landlock, ".", &c->held, &c->e) < 0)
		return layer_failed(c, PS_LAYER_LANDLOCK);
	return 0;
}

/* Close everything the parent had open but our five. After Landlock, whose prepared path
 * descriptors it needs; before seccomp, whose filter would otherwise have to allow it. Then
 * RLIMIT_NOFILE, which phase_limits left for now (limits.c). */
static int phase_fds(struct ps_child *c)
{
	int first = CHILD_FIRST_FREE_FD + (c->learn_fd ? 1 : 0);

	if (syscall(SYS_close_range, first, ~0U, 0) < 0) {
		ps_child_err_set(&c->e, errno, "close_range(%d, ~0): %s", first, strerror(errno));
		return -1;
	}
	return ps_limits_apply(c->limits, c->id.drop_uid, PS_LIMITS_AFTER_FDS, &c->e);
}

/* A one-shot run's filter, built by the parent while we started the interpreter. Before
 * phase_fds, which closes its pipe. */
static int phase_filter(struct ps_child *c)
{
	c->filter = c->w->filter;
	if (c->filter_rx < 0)
		return 0;
	if (ps_filter_receive(c->filter_rx, &c->filter, &c->e) < 0)
		return -1;
	/* pysnip learn: the same channel (a socket then) takes the listener back. */
	if (ps_filter_learns(c->filter)) {
		if (dup2(c->filter_rx, PS_LEARN_FD) < 0) {
			ps_child_err_set(&c->e, errno, "dup2(learn channel, %d): %s", PS_LEARN_FD,
					 strerror(errno));
			return -1;
		}
		c->learn_fd = true;
	}
	close(c->filter_rx);
	c->filter_rx = -1;
	return 0;
}

/* Last before untrusted code: from here on only the allowlist's syscalls exist. */
static int phase_seccomp(struct ps_child *c)
{
	if (!c->filter)
		return 0;
	if (ps_filter_load(c->filter, CHILD_STATUS_FD, &c->held, &c->e) < 0)
		return layer_failed(c, PS_LAYER_SECCOMP);
	return 0;
}

/* A served request's files, after its code: each into input/NAME as the run's own read-only
 * copy (the caller's bytes are in the request; nothing of theirs can change), and output/. */
static int request_inputs(struct ps_child *c, uint32_t n)
{
	struct ps_file_in *in;
	char (*names)[256];
	int ret = 0;

	if (n > PS_WREQ_INPUTS_MAX) {
		ps_child_err_set(&c->e, EPROTO, "request: %u input files (at most %d)", n,
				 PS_WREQ_INPUTS_MAX);
		return -1;
	}
	in = calloc(n, sizeof(*in));
	names = calloc(n, sizeof(*names));
	for (uint32_t i = 0; in && names && i < n && ret == 0; i++) {
		struct ps_wreq_file h;
		char *data = NULL;

		ret = ps_read_exact(0, &h, sizeof(h));
		if (ret == 0 && (h.name_len == 0 || h.name_len > 255))
			ret = -EPROTO;
		if (ret == 0)
			ret = ps_read_exact(0, names[i], h.name_len);
		if (ret == 0 && (memchr(names[i], '/', h.name_len) || !(data = malloc(h.len + 1))))
			ret = data ? -EPROTO : -ENOMEM;
		if (ret == 0)
			ret = ps_read_exact(0, data, h.len);
		in[i] = (struct ps_file_in){ .name = names[i], .data = data, .len = h.len };
	}
	if (!in || !names)
		ret = -ENOMEM;
	if (ret < 0) {
		ps_child_err_set(&c->e, -ret, "read(0, request files): %s", ps_errstr(-ret));
		return -1;
	}
	/* the worker is the run's own now: no bind, no chown */
	if (ps_files_place_inputs(in, n, false, getuid(), getgid(), &c->e) < 0 ||
	    ps_files_make_output(getuid(), getgid(), &c->e) < 0)
		return -1;
	return 0;
}

static bool request_waiting(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

/* A spare forked to rehearse (ps_worker.rehearse), before its request: the warm-up, then
 * PS_REC_READY, which the front waits to see before it hands this spare a request. Under
 * every layer already: the rehearsal is our code, but the pages it writes are the run's. */
static void rehearse(struct ps_child *c)
{
	struct ps_status_rec rec = { .kind = PS_REC_READY };

	ps_interp_rehearse_plot();
	(void)ps_write_all(c->status, &rec, sizeof(rec));
}

/* Forked ahead of demand: wait here, every other phase held, for the request; then lower the
 * rlimits to its limits. Soft and hard both (ps_limits_apply), so that the snippet cannot
 * raise them back; prlimit64 on ourselves is all the filter lets through for it. The code
 * is read with malloc: the zygote we were forked from is single-threaded. */
static int phase_request(struct ps_child *c)
{
	struct ps_wreq q;
	struct rusage ru;
	char *code;
	int ret;

	if (!c->await_request)
		return 0;
	ps_interp_begin(CHILD_REPORT_FD);
	if (c->w->rehearse && !request_waiting())
		rehearse(c);
	ret = ps_read_exact(0, &q, sizeof(q));
	if (ret == 0 && q.magic != PS_WREQ_MAGIC)
		ret = -EPROTO;
	if (ret < 0) {
		ps_child_err_set(&c->e, -ret, "read(0, request): %s", ps_errstr(-ret));
		return -1;
	}
	code = malloc(q.code_len + 1);
	if (!code) {
		ps_child_err_set(&c->e, ENOMEM, "malloc(%llu): %s", (unsigned long long)q.code_len,
				 ps_errstr(ENOMEM));
		return -1;
	}
	ret = ps_read_exact(0, code, q.code_len);
	if (ret < 0) {
		ps_child_err_set(&c->e, -ret, "read(0, code): %s", ps_errstr(-ret));
		return -1;
	}
	code[q.code_len] = '\0';
	/* what was used so far was the spare's, not the run's (the HELD record says it) */
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		c->ahead_utime = ru.ru_utime;
		c->ahead_stime = ru.ru_stime;
	}
	c->code = code;
	c->code_len = q.code_len;
	if (q.n_inputs && request_inputs(c, q.n_inputs) < 0)
		return -1;
	return ps_limits_apply(&q.limits, c->id.drop_uid, PS_LIMITS_ALL, &c->e);
}

static const struct phase {
	const char *name;
	int (*run)(struct ps_child *c);
} phases[] = {
	{ "lifecycle", phase_lifecycle },
	{ "stdio", phase_stdio },
	{ "scratch", phase_scratch },
	{ "limits", phase_limits },
	{ "identity", phase_identity },
	{ "nnp", phase_nnp },
	{ "landlock", phase_landlock },
	{ "filter", phase_filter },
	{ "fds", phase_fds },
	{ "seccomp", phase_seccomp },
	{ "request", phase_request },
};

static void child_report(struct ps_child *c, uint32_t kind, int phase)
{
	struct ps_status_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = kind;
	rec.phase = phase;
	rec.err = c->e.err;
	rec.held = c->held;
	rec.utime_us = (int64_t)c->ahead_utime.tv_sec * 1000000 + c->ahead_utime.tv_usec;
	rec.stime_us = (int64_t)c->ahead_stime.tv_sec * 1000000 + c->ahead_stime.tv_usec;
	memcpy(rec.msg, c->e.msg, sizeof(rec.msg));
	/* Every phase held: say where scratch is, so that the verdict can tell the snippet's
	 * own files from what a layer refused (result.c). Empty if it does not fit. */
	if (kind == PS_REC_HELD && strlen(c->scratch) < sizeof(rec.msg))
		snprintf(rec.msg, sizeof(rec.msg), "%s", c->scratch);
	(void)ps_write_all(c->status, &rec, sizeof(rec));
}

/* A zygote's worker says how it ends before it does, once its report is written: the exit
 * code and its usage, behind the run's token, with its output and channels closed. The front
 * can answer then instead of waiting for the kernel to tear the worker's address space down
 * (about a millisecond), but only once /proc shows this process in its own exit (supervise.c):
 * the snippet can forge this record, not that. So _exit follows the write at once. The
 * kernel's word (wait4) still decides every other ending. */
static void child_report_exit(struct ps_child *c, int rc)
{
	struct ps_status_rec rec;
	struct rusage ru;

	close(STDOUT_FILENO);
	close(STDERR_FILENO);
	close(CHILD_REPORT_FD);
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.kind = PS_REC_EXIT;
	rec.err = rc;
	rec.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
	rec.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	rec.maxrss_kb = ru.ru_maxrss;
	snprintf(rec.msg, sizeof(rec.msg), "%s", c->token);
	/* What is left is the kernel's teardown of our address space (a scientific worker's is
	 * ~70 MB: 2 ms). At SCHED_IDLE the front, woken by the record on this CPU, runs at once
	 * instead of queueing behind it for the rest of our slice. */
	if (ps_filter_idle_exit(c->filter))
		(void)sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ 0 });
	(void)ps_write_all(c->status, &rec, sizeof(rec));
}

void ps_worker_child_main(struct ps_child *c)
{
	c->held.layers_off = c->w->layers_off;
	c->held.layers_degraded = c->w->layers_degraded;
	c->held.namespaces = c->w->ns_static;
	for (size_t i = 0; i < PS_ARRAY_LEN(phases); i++) {
		if (phases[i].run(c) < 0) {
			child_report(c, PS_REC_PHASE_FAIL, (int)i);
			_exit(125);
		}
	}
	ps_interp_set_report_token(c->token);
	child_report(c, PS_REC_HELD, -1);
	if (c->w->become)	/* a session holder: its cell loop from here on */
		c->w->become(c->token);
	int rc = ps_interp_run(c->code, c->code_len, CHILD_REPORT_FD);

	if (c->await_request)
		child_report_exit(c, rc);
	_exit(rc);
}

const char *ps_worker_phase_name(int i)
{
	if (i < 0 || (size_t)i >= PS_ARRAY_LEN(phases))
		return "?";
	return phases[i].name;
}

