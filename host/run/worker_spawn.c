/* The parent's side of a worker: prepare what does not change per run (filter, Landlock
 * paths, namespaces), fork one worker (scratch, channels, cgroup), hand a one-shot run's
 * filter over, supervise, clean up. The worker's own side is worker.c. */
#include "worker_int.h"

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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "python/interp.h"
#include "util/util.h"

static int prepare(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
		   bool build_filter, bool session, char *err, size_t errlen)
{
	const char *ro[64];
	size_t n = 0;
	int ns;

	memset(w, 0, sizeof(*w));
	w->policy = p;
	for (int l = 0; l < PS_LAYER_COUNT; l++)
		if (p->layers[l] == PS_LAYER_OFF)
			layers_off |= 1u << l;
	w->layers_off = layers_off;
	snprintf(w->tmp_base, sizeof(w->tmp_base), "%s",
		 ps_scratch_base(!(layers_off & (1u << PS_LAYER_NAMESPACES))));

	/* As root a per-process uid range is used: it must be nobody else's (checked each time:
	 * accounts come and go). */
	if (!(layers_off & (1u << PS_LAYER_IDENTITY)) && getuid() == 0 &&
	    ps_identity_check_range(p, err, errlen) < 0)
		goto fail;
	if (!(layers_off & (1u << PS_LAYER_SECCOMP))) {
		if (!build_filter)
			w->filter_deferred = true;
		else if ((session ? ps_filter_build_session : ps_filter_build)(p, &w->filter, err,
									       errlen) < 0)
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
	/* A CPU share is cpu.max: without a cgroup it cannot be had, and must not be a no-op. */
	if (p->limits.cpus_milli && !w->cgroup) {
		snprintf(err, errlen, "policy %s: field limits.cpus: a CPU share needs a delegated "
			 "cgroup v2 directory (policy cgroup.parent, layers.cgroup not off): %s", p->path,
			 !p->cgroup_parent ? "the policy names none" :
			 (layers_off & (1u << PS_LAYER_CGROUP)) ? "the cgroup layer is off" :
			 "this host's cgroup is not usable");
		goto fail;
	}
	/* matplotlib's prebuilt font list is seeded by the worker, after it cleared its
	 * environment: where it is (PYSNIP_MPL_CACHE) is decided here */
	(void)ps_mpl_cache_dir();
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
	return prepare(w, p, layers_off, true, false, err, errlen);
}

int ps_worker_prepare_session(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
			      void (*become)(const char *token), char *err, size_t errlen)
{
	if (prepare(w, p, layers_off, true, true, err, errlen) < 0)
		return -1;
	w->become = become;
	return 0;
}

int ps_worker_prepare_oneshot(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
			      const struct ps_interp_opts *io, char *err, size_t errlen)
{
	if (prepare(w, p, layers_off, false, false, err, errlen) < 0)
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

int ps_worker_share_scratch(struct ps_worker *w, char *err, size_t errlen)
{
	char path[sizeof(w->shared_scratch)];

	if (!ps_worker_mounts_scratch(w))
		return 0;
	/* Only the mountpoint: no run writes here (each has its tmpfs over it, or fails). */
	snprintf(path, sizeof(path), "%s/pysnip-scratch", w->tmp_base);	/* fits: see ps_worker */
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir(%s/pysnip-scratch): %s", w->tmp_base, strerror(errno));
		return -1;
	}
	/* A host that refuses the mount keeps a directory per run, where a best-effort
	 * namespaces layer degrades run by run as before. */
	if (!ps_ns_probe_scratch_mount(path)) {
		rmdir(path);
		return 0;
	}
	memcpy(w->shared_scratch, path, sizeof(path));
	return 0;
}

static int make_scratch(const struct ps_worker *w, const struct ps_identity *id, char *path,
			size_t len)
{
	snprintf(path, len, "%s/pysnip-run-XXXXXX", w->tmp_base);
	if (!mkdtemp(path))
		return -errno;
	/* The worker's uid must own its cwd; nobody else may look in. A per-process uid is
	 * known only to the worker (phase_scratch chowns it then). */
	if (id->drop_uid && !id->per_process && chown(path, id->uid, id->gid) < 0) {
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
	/* a worker forked later from this process gets a copy of its stack */
	explicit_bzero(raw, sizeof(raw));
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
	struct ps_child c;
	pid_t pid;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->f = (struct ps_supervise_fds){ .out = -1, .err = -1, .status = -1, .report = -1,
					  .in = -1, .pidfd = -1, .life = -1, .procstat = -1 };
	p->cg.dir_fd = -1;
	memset(&c, 0, sizeof(c));
	c.w = w;
	c.limits = l;
	c.await_request = !r;
	if (r) {
		c.code = r->code;
		c.code_len = r->code_len;
		c.inputs = r->inputs;
		c.n_inputs = r->n_inputs;
		c.want_output = r->want_output;
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
	ret = w->shared_scratch[0] ? 0 : make_scratch(w, &c.id, p->scratch, sizeof(p->scratch));
	if (ret < 0) {
		snprintf(o->host_error, sizeof(o->host_error), "mkdtemp(%s/pysnip-run-XXXXXX): %s",
			 w->tmp_base, strerror(-ret));
		p->scratch[0] = '\0';
		return ret;
	}
	c.scratch = w->shared_scratch[0] ? w->shared_scratch : p->scratch;
	/* The status pipe in packet mode (O_DIRECT): each write is read as one packet, so what
	 * the snippet writes to fd 3 (a short record, junk) can neither shift the framing of
	 * the records after it (the seccomp handler's) nor end the channel. */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(status, O_CLOEXEC | O_DIRECT) < 0 || pipe2(report, O_CLOEXEC) < 0) {
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
		/* learn: a socket, so that the worker can send its listener back on it */
		if ((w->learn ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, flt)
			      : pipe2(flt, O_CLOEXEC)) < 0) {
			ret = -errno;
			snprintf(o->host_error, sizeof(o->host_error), "%s(): %s",
				 w->learn ? "socketpair" : "pipe2", strerror(errno));
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
		ps_worker_child_main(&c);

	if (w->filter_deferred) {
		close(flt[0]);
		flt[0] = -1;
		ret = send_filter(w, flt[1], o);
		/* learn: the supervisor gets our end; the worker sends its listener there */
		if (ret == 0 && w->learn && (ret = ps_notify_start(w->learn, flt[1])) < 0)
			snprintf(o->host_error, sizeof(o->host_error), "sendmsg(learn uplink): %s",
				 strerror(-ret));
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
	o->pid = p.pid;
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
