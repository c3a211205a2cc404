/* The worker: a forked child that applies the sandbox phase by phase, then runs the snippet.
 * The checklist is the phase table below; each phase says why it sits where it does. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "interp.h"
#include "util.h"

/* Fixed descriptor numbers inside the worker. */
enum { CHILD_STATUS_FD = 3, CHILD_REPORT_FD = 4, CHILD_FIRST_FREE_FD = 5 };

struct child {
	const struct ps_worker *w;
	const struct ps_limits *limits;	/* applied by the phases (a request may lower them) */
	bool await_request;		/* forked ahead of demand: the code comes on fd 0 */
	const char *code;
	size_t code_len;
	const char *scratch;
	pid_t parent;
	int in, out, err, status, report;	/* child ends before phase_stdio */
	int filter_rx;			/* a deferred filter arrives here (-1: none) */
	const struct ps_filter *filter;	/* what phase_seccomp loads */
	struct ps_identity id;
	const char *token;
	struct ps_held held;
	struct ps_child_err e;
};

static bool layer_on(const struct child *c, enum ps_layer l)
{
	return !(c->w->layers_off & (1u << l));
}

/* A layer's phase failed: fatal when required, noted when best-effort. */
static int layer_failed(struct child *c, enum ps_layer l)
{
	if (c->w->policy->layers[l] == PS_LAYER_BEST_EFFORT) {
		c->held.layers_degraded |= 1u << l;
		return 0;
	}
	return -1;
}

/* Die with the parent, lead our own process group (so the supervisor can kill it whole),
 * and start from default signal dispositions: first, before anything can block. */
static int phase_lifecycle(struct child *c)
{
	sigset_t all;

	/* Forked ahead of demand: the phases are background work until a request claims us. */
	if (c->await_request) {
		prctl(PR_SET_NAME, "pysnip-worker");
		if (c->w->ahead_nice > 0)
			(void)setpriority(PRIO_PROCESS, 0, c->w->ahead_nice);
	}
	if (c->w->init_in_child) {
		char err[sizeof(c->e.msg)];

		if (ps_interp_init(c->w->init_in_child, err, sizeof(err)) < 0) {
			ps_child_err_set(&c->e, EINVAL, "%s", err);
			return -1;
		}
	} else {
		ps_interp_after_fork();
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		ps_child_err_set(&c->e, errno, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
		return -1;
	}
	if (getppid() != c->parent && c->parent != 0 && getppid() != 0) {
		ps_child_err_set(&c->e, ESRCH, "parent %d exited before the worker started", c->parent);
		return -1;
	}
	if (setsid() < 0) {
		ps_child_err_set(&c->e, errno, "setsid(): %s", strerror(errno));
		return -1;
	}
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
static int phase_stdio(struct child *c)
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

/* The scratch directory becomes a size-capped tmpfs and the cwd. Needs mount privileges,
 * so it comes before the identity drop. */
static int phase_scratch(struct child *c)
{
	if (layer_on(c, PS_LAYER_NAMESPACES)) {
		/* ps_ns_fork falls back to a plain fork where the host refuses a mount namespace. */
		c->held.namespaces |= ps_ns_fork_flags();
		if (!(ps_ns_fork_flags() & CLONE_NEWNS)) {
			ps_child_err_set(&c->e, EPERM, "clone(CLONE_NEWNS): refused by the host");
			if (layer_failed(c, PS_LAYER_NAMESPACES) < 0)
				return -1;
		}
		if ((c->w->ns_static || getuid() == 0) &&
		    ps_ns_mount_scratch(c->scratch, c->limits->scratch_bytes, &c->held, &c->e) < 0 &&
		    layer_failed(c, PS_LAYER_NAMESPACES) < 0)
			return -1;
	}
	if (chdir(c->scratch) < 0) {
		ps_child_err_set(&c->e, errno, "chdir(%s): %s", c->scratch, strerror(errno));
		return -1;
	}
	ps_interp_set_scratch(c->scratch);
	return 0;
}

/* rlimits only ever lower, so they need no privilege; before the identity drop so a
 * private uid's RLIMIT_NPROC is in place when that uid comes to exist. */
static int phase_limits(struct child *c)
{
	return ps_limits_apply(c->limits, c->id.drop_uid, &c->e);
}

/* Credentials before the filter, so the filter needn't allow setresuid. */
static int phase_identity(struct child *c)
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
static int phase_nnp(struct child *c)
{
	return ps_nnp_apply(&c->held, &c->e);
}

static int phase_landlock(struct child *c)
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
 * descriptors it needs; before seccomp, whose filter would otherwise have to allow it. */
static int phase_fds(struct child *c)
{
	if (syscall(SYS_close_range, CHILD_FIRST_FREE_FD, ~0U, 0) < 0) {
		ps_child_err_set(&c->e, errno, "close_range(%d, ~0): %s", CHILD_FIRST_FREE_FD,
				 strerror(errno));
		return -1;
	}
	return 0;
}

/* A one-shot run's filter, built by the parent while we started the interpreter. Before
 * phase_fds, which closes its pipe. */
static int phase_filter(struct child *c)
{
	c->filter = c->w->filter;
	if (c->filter_rx < 0)
		return 0;
	if (ps_filter_receive(c->filter_rx, &c->filter, &c->e) < 0)
		return -1;
	close(c->filter_rx);
	c->filter_rx = -1;
	return 0;
}

/* Last before untrusted code: from here on only the allowlist's syscalls exist. */
static int phase_seccomp(struct child *c)
{
	if (!c->filter)
		return 0;
	if (ps_filter_load(c->filter, CHILD_STATUS_FD, &c->held, &c->e) < 0)
		return layer_failed(c, PS_LAYER_SECCOMP);
	return 0;
}

static int read_exact(int fd, void *buf, size_t len)
{
	char *b = buf;

	while (len) {
		ssize_t n = read(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Forked ahead of demand: wait here, every other phase held, for the request; then lower the
 * rlimits to its limits. Soft and hard both (ps_limits_apply), so that the snippet cannot
 * raise them back; prlimit64 on ourselves is all the filter lets through for it. The code
 * is read with malloc: the zygote we were forked from is single-threaded. */
static int phase_request(struct child *c)
{
	struct ps_wreq q;
	char *code;
	int ret;

	if (!c->await_request)
		return 0;
	ret = read_exact(0, &q, sizeof(q));
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
	ret = read_exact(0, code, q.code_len);
	if (ret < 0) {
		ps_child_err_set(&c->e, -ret, "read(0, code): %s", ps_errstr(-ret));
		return -1;
	}
	code[q.code_len] = '\0';
	c->code = code;
	c->code_len = q.code_len;
	return ps_limits_apply(&q.limits, c->id.drop_uid, &c->e);
}

static const struct phase {
	const char *name;
	int (*run)(struct child *c);
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

static void child_report(struct child *c, uint32_t kind, int phase)
{
	struct ps_status_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = kind;
	rec.phase = phase;
	rec.err = c->e.err;
	rec.held = c->held;
	memcpy(rec.msg, c->e.msg, sizeof(rec.msg));
	(void)ps_write_all(c->status, &rec, sizeof(rec));
}

static __attribute__((noreturn)) void child_main(struct child *c)
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
	_exit(ps_interp_run(c->code, c->code_len, CHILD_REPORT_FD));
}

const char *ps_worker_phase_name(int i)
{
	if (i < 0 || (size_t)i >= PS_ARRAY_LEN(phases))
		return "?";
	return phases[i].name;
}

static int prepare(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
		   bool build_filter, char *err, size_t errlen)
{
	const char *ro[64];
	size_t n = 0;
	const char *tmp = getenv("TMPDIR");
	int ns;

	memset(w, 0, sizeof(*w));
	w->policy = p;
	for (int l = 0; l < PS_LAYER_COUNT; l++)
		if (p->layers[l] == PS_LAYER_OFF)
			layers_off |= 1u << l;
	w->layers_off = layers_off;
	snprintf(w->tmp_base, sizeof(w->tmp_base), "%s", tmp && *tmp == '/' ? tmp : "/tmp");

	if (!(layers_off & (1u << PS_LAYER_SECCOMP))) {
		if (!build_filter)
			w->filter_deferred = true;
		else if (ps_filter_build(p, &w->filter, err, errlen) < 0)
			goto fail;
	}
	if (!(layers_off & (1u << PS_LAYER_LANDLOCK))) {
		ro[n++] = ps_interp_stdlib_dir();
		ro[n++] = ps_interp_dynload_dir();
		for (size_t i = 0; i < p->python_paths.n && n < PS_ARRAY_LEN(ro); i++)
			ro[n++] = p->python_paths.items[i];
		for (size_t i = 0; i < p->read_paths.n && n < PS_ARRAY_LEN(ro); i++)
			ro[n++] = p->read_paths.items[i];
		if (ps_landlock_prepare(p, ro, n, &w->landlock, err, errlen) < 0) {
			if (p->layers[PS_LAYER_LANDLOCK] != PS_LAYER_BEST_EFFORT)
				goto fail;
			w->layers_degraded |= 1u << PS_LAYER_LANDLOCK;
		}
	}
	if (p->cgroup_parent && !(layers_off & (1u << PS_LAYER_CGROUP))) {
		if (ps_cgroup_check(p->cgroup_parent, err, errlen) == 0)
			w->cgroup = true;
		else if (p->layers[PS_LAYER_CGROUP] == PS_LAYER_BEST_EFFORT)
			w->layers_degraded |= 1u << PS_LAYER_CGROUP;
		else
			goto fail;
	}
	if (!(layers_off & (1u << PS_LAYER_NAMESPACES))) {
		bool best = p->layers[PS_LAYER_NAMESPACES] == PS_LAYER_BEST_EFFORT;

		ns = ps_ns_enter_static(p, best, err, errlen);
		if (ns < 0)
			goto fail;
		w->ns_static = (uint32_t)ns;
		if (ns == 0)
			w->layers_degraded |= 1u << PS_LAYER_NAMESPACES;
	}
	return 0;
fail:
	ps_worker_release(w);
	return -1;
}

int ps_worker_prepare(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
		      char *err, size_t errlen)
{
	return prepare(w, p, layers_off, true, err, errlen);
}

int ps_worker_prepare_oneshot(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
			      const struct ps_interp_opts *io, char *err, size_t errlen)
{
	if (prepare(w, p, layers_off, false, err, errlen) < 0)
		return -1;
	w->init_in_child = io;
	return 0;
}

/* Parent, right after the fork: build the deferred filter and send it. A policy error here
 * (an unknown syscall group) comes back as o->host_error starting "policy ". */
static int send_filter(const struct ps_worker *w, int fd, struct ps_outcome *o)
{
	struct ps_filter *f = NULL;
	int rc;

	if (ps_filter_build(w->policy, &f, o->host_error, sizeof(o->host_error)) < 0)
		return -EINVAL;
	rc = ps_filter_send(f, fd);
	ps_filter_free(f);
	if (rc < 0)
		snprintf(o->host_error, sizeof(o->host_error), "write(filter pipe): %s",
			 strerror(-rc));
	return rc;
}

void ps_worker_release(struct ps_worker *w)
{
	ps_filter_free(w->filter);
	ps_landlock_free(w->landlock);
	if (w->ns_static)
		ps_ns_release();
	w->filter = NULL;
	w->landlock = NULL;
}

static int make_scratch(const struct ps_worker *w, const struct ps_identity *id, char *path,
			size_t len)
{
	snprintf(path, len, "%s/pysnip-run-XXXXXX", w->tmp_base);
	if (!mkdtemp(path))
		return -errno;
	/* The worker's uid must own its cwd; nobody else may look in. */
	if (id->drop_uid && chown(path, id->uid, id->gid) < 0) {
		int e = errno;

		rmdir(path);
		return -e;
	}
	return 0;
}

static int make_token(char *out, size_t len)
{
	unsigned char raw[16];
	ssize_t n = getrandom(raw, sizeof(raw), 0);

	if (n != (ssize_t)sizeof(raw))
		return n < 0 ? -errno : -EIO;
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < len; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
	p[0] = p[1] = -1;
}

/* The worker is born inside its cgroup where there is one (clone3 CLONE_INTO_CGROUP), so
 * not one instruction runs outside its limits. */
static pid_t spawn(const struct ps_worker *w, const struct ps_cgroup *cg)
{
	bool ns = !(w->layers_off & (1u << PS_LAYER_NAMESPACES));
	pid_t pid;

	if (ns || cg)
		return ps_ns_fork_into(0, cg ? cg->dir_fd : -1);
	pid = fork();
	return pid;
}

int ps_worker_spawn(const struct ps_worker *w, const struct ps_limits *l, const struct ps_run *r,
		    unsigned slot, struct ps_worker_proc *p, struct ps_outcome *o)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int status[2] = { -1, -1 }, report[2] = { -1, -1 }, flt[2] = { -1, -1 };
	struct child c;
	pid_t pid;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->f = (struct ps_supervise_fds){ -1, -1, -1, -1, -1, -1, -1, NULL, 0 };
	p->cg.dir_fd = -1;
	memset(&c, 0, sizeof(c));
	c.w = w;
	c.limits = l;
	c.await_request = !r;
	if (r) {
		c.code = r->code;
		c.code_len = r->code_len;
	}
	c.parent = getpid();
	ps_identity_plan(w->policy, slot, &c.id);
	if (w->layers_off & (1u << PS_LAYER_IDENTITY))
		c.id.drop_uid = false;

	ret = make_token(o->report_token, sizeof(o->report_token));
	if (ret < 0) {
		snprintf(o->host_error, sizeof(o->host_error), "getrandom(16): %s", strerror(-ret));
		return ret;
	}
	c.token = o->report_token;
	ret = make_scratch(w, &c.id, p->scratch, sizeof(p->scratch));
	if (ret < 0) {
		snprintf(o->host_error, sizeof(o->host_error), "mkdtemp(%s/pysnip-run-XXXXXX): %s",
			 w->tmp_base, strerror(-ret));
		p->scratch[0] = '\0';
		return ret;
	}
	c.scratch = p->scratch;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
		ret = -errno;
		snprintf(o->host_error, sizeof(o->host_error), "pipe2(): %s", strerror(errno));
		goto fail;
	}
	c.in = in[0];
	c.out = out[1];
	c.err = errp[1];
	c.status = status[1];
	c.report = report[1];
	c.filter_rx = -1;
	if (w->filter_deferred) {
		if (pipe2(flt, O_CLOEXEC) < 0) {
			ret = -errno;
			snprintf(o->host_error, sizeof(o->host_error), "pipe2(): %s", strerror(errno));
			goto fail;
		}
		c.filter_rx = flt[0];
	}

	if (w->cgroup) {
		if (ps_cgroup_create(w->policy->cgroup_parent, l, &p->cg, o->host_error,
				     sizeof(o->host_error)) < 0) {
			p->cg.dir_fd = -1;
			ret = -EIO;
			goto fail;
		}
		o->cgroup_used = true;
	}
	fflush(NULL);
	p->fork_us = ps_now_us();
	pid = spawn(w, o->cgroup_used ? &p->cg : NULL);
	if (pid < 0) {
		ret = -errno;
		snprintf(o->host_error, sizeof(o->host_error), "fork(): %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child_main(&c);

	if (w->filter_deferred) {
		close(flt[0]);
		flt[0] = -1;
		ret = send_filter(w, flt[1], o);
		close_pair(flt);
		if (ret < 0) {
			/* the worker waits for its filter: it must not run without one */
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto fail;
		}
	}
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	close(status[1]);
	close(report[1]);
	p->pid = pid;
	p->f.in = in[1];
	p->f.out = out[0];
	p->f.err = errp[0];
	p->f.status = status[0];
	p->f.report = report[0];
	p->f.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
fail:
	close_pair(flt);
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	close_pair(status);
	close_pair(report);
	ps_worker_cleanup(p, o);
	return ret;
}

void ps_worker_cleanup(struct ps_worker_proc *p, struct ps_outcome *o)
{
	int *fds[] = { &p->f.in, &p->f.out, &p->f.err, &p->f.status, &p->f.report, &p->f.pidfd };

	for (size_t i = 0; i < PS_ARRAY_LEN(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	if (o->cgroup_used && p->cg.dir_fd >= 0) {
		struct ps_cgroup_stats cs;

		ps_cgroup_read_stats(&p->cg, &cs);
		o->cgroup_memory_peak = cs.memory_peak;
		o->cgroup_oom_kills = cs.oom_kills;
		o->held.cgroup = 1;
		ps_cgroup_destroy(&p->cg);
		p->cg.dir_fd = -1;
	}
	if (p->scratch[0])
		ps_rmtree(p->scratch);
	p->scratch[0] = '\0';
}

int ps_worker_run(const struct ps_worker *w, const struct ps_run *r, struct ps_outcome *o)
{
	struct ps_worker_proc p;
	int ret = ps_worker_spawn(w, &r->limits, r, r->slot, &p, o);

	if (ret < 0)
		return ret;
	p.f.feed = r->stdin_data;
	p.f.feed_len = r->stdin_len;
	ps_supervise(p.pid, &p.f, r, p.fork_us, o);
	/* ps_supervise closed the channels; the pidfd is ours. */
	p.f.in = p.f.out = p.f.err = p.f.status = p.f.report = -1;
	ps_worker_cleanup(&p, o);
	return 0;
}

void ps_outcome_free(struct ps_outcome *o)
{
	free(o->out.buf);
	free(o->err.buf);
	free(o->report.buf);
	memset(o, 0, sizeof(*o));
}
