/* Zygotes for `pysnip serve`, the front's side: spawn, call, stop. The zygote process itself
 * is zygote_proc.c. See zygote.h for the protocol. */
#include "zygote/zygote.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "python/interp.h"
#include "run/result.h"
#include "util/util.h"
#include "run/worker.h"

extern char **environ;

enum { READY_TIMEOUT_MS = 120000, RESTART_WAIT_MS = 15000, FRAME_MAX = 512 << 20 };

/* ---------------------------------------------------------------- front side */

void ps_zygote_init(struct ps_zygote *z, const char *policy, const char *name,
		    const char *tmp_root, uint32_t layers_off, unsigned spare)
{
	pthread_condattr_t ca;

	memset(z, 0, sizeof(*z));
	snprintf(z->policy, sizeof(z->policy), "%s", policy);
	snprintf(z->name, sizeof(z->name), "%s", name);
	snprintf(z->tmp_root, sizeof(z->tmp_root), "%s", tmp_root);
	z->layers_off = layers_off;
	z->spare = spare ? spare : 1;
	z->pid = -1;
	z->ctl = -1;
	pthread_mutex_init(&z->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&z->cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* The zygote's environment: ours, with TMPDIR pointing at its own scratch base, and
 * LD_BIND_NOW: the libraries' symbols are resolved once in the zygote, not on first call in
 * every worker (a dozen page faults and ~30 us each). No snippet sees it: os.environ is built
 * from an empty environment and the C one is cleared before any run (interp.c). */
static char **zygote_env(const char *tmpdir, char *tmpvar, size_t len)
{
	static char bind_now[] = "LD_BIND_NOW=1";
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "TMPDIR=", 7) && strncmp(environ[i], "LD_BIND_NOW=", 12))
			env[k++] = environ[i];
	snprintf(tmpvar, len, "TMPDIR=%s", tmpdir);
	env[k++] = tmpvar;
	env[k++] = bind_now;
	return env;
}

static int spawn(struct ps_zygote *z, int child_end, pid_t *pid, char *err, size_t errlen)
{
	char lo[24], parent[24], spare[24], tmpvar[sizeof(z->tmp_dir) + 8], exe[PATH_MAX];
	char *argv[] = { "pysnip", "zygote", "--policy", z->policy, "--layers-off", lo,
			 "--parent", parent, "--spare", spare, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char **env;
	int ret;

	/* the slim binary next to ours: see zygote_proc.c */
	snprintf(exe, sizeof(exe), "%s/pysnip", ps_exe_dir());
	snprintf(lo, sizeof(lo), "%u", z->layers_off);
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	snprintf(spare, sizeof(spare), "%u", z->spare);
	env = zygote_env(z->tmp_dir, tmpvar, sizeof(tmpvar));
	if (!env) {
		snprintf(err, errlen, "zygote %s: out of memory", z->policy);
		return -1;
	}
	/* The front blocks SIGTERM/SIGINT (for sigwait) and ignores SIGPIPE; both would survive
	 * exec. The zygote starts clean. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, child_end, PS_ZYGOTE_CTL_FD);
	ret = posix_spawn(pid, exe, &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (ret) {
		snprintf(err, errlen, "posix_spawn(%s zygote --policy %s): %s", exe, z->policy,
			 strerror(ret));
		return -1;
	}
	return 0;
}

/* The zygote's first message: "ok", or the reason it could not start. */
static int await_ready(struct ps_zygote *z, int ctl, char *err, size_t errlen)
{
	struct pollfd p = { .fd = ctl, .events = POLLIN };
	char msg[1024];
	ssize_t n;

	if (poll(&p, 1, READY_TIMEOUT_MS) <= 0) {
		snprintf(err, errlen, "zygote %s: not ready after %d s", z->policy,
			 READY_TIMEOUT_MS / 1000);
		return -1;
	}
	n = recv(ctl, msg, sizeof(msg) - 1, 0);
	if (n <= 0) {
		snprintf(err, errlen, "zygote %s: exited during start-up (see its messages above)",
			 z->policy);
		return -1;
	}
	msg[n] = '\0';
	if (strcmp(msg, "ok")) {
		snprintf(err, errlen, "%s", msg);
		return -1;
	}
	return 0;
}

static void close_idle(struct ps_zidle *e)
{
	for (int i = 0; i < PS_ZWORKER_FDS; i++)
		if (e->fd[i] >= 0)
			close(e->fd[i]);
}

/* One worker announcement: 1, 0 at EOF or error, -1 for a malformed message (skipped). */
static int recv_worker(int ctl, struct ps_zidle *e)
{
	struct iovec iov = { .iov_base = &e->w, .iov_len = sizeof(e->w) };
	union {
		char buf[CMSG_SPACE(sizeof(int) * PS_ZWORKER_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;

	do
		n = recvmsg(ctl, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	for (int i = 0; i < PS_ZWORKER_FDS; i++)
		e->fd[i] = -1;
	c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		memcpy(e->fd, CMSG_DATA(c), sizeof(int) * (k < PS_ZWORKER_FDS ? k : PS_ZWORKER_FDS));
		bool session = e->w.tag & PS_ZTAG_SESSION;

		if ((k == PS_ZWORKER_FDS || (session && k == PS_ZSESSION_FDS)) &&
		    n == (ssize_t)sizeof(e->w) &&
		    e->w.magic == PS_ZWORKER_MAGIC && !(m.msg_flags & MSG_CTRUNC))
			return 1;
	}
	close_idle(e);
	return -1;
}

/* The pool's only filler: one per zygote generation, ends at the zygote's EOF. */
static void *reader_main(void *arg)
{
	struct ps_zygote *z = arg;
	int ctl = z->ctl;
	struct ps_zidle e;
	int r;

	while ((r = recv_worker(ctl, &e)) != 0) {
		if (r < 0)
			continue;
		pthread_mutex_lock(&z->mu);
		if (z->n_idle == z->cap_idle) {
			size_t cap = z->cap_idle ? 2 * z->cap_idle : 16;
			struct ps_zidle *ni = realloc(z->idle, cap * sizeof(*ni));

			if (!ni) {
				pthread_mutex_unlock(&z->mu);
				close_idle(&e);
				continue;
			}
			z->idle = ni;
			z->cap_idle = cap;
		}
		z->idle[z->n_idle++] = e;
		pthread_cond_broadcast(&z->cv);
		pthread_mutex_unlock(&z->mu);
	}
	/* The zygote is gone, and its idle workers with it. */
	pthread_mutex_lock(&z->mu);
	for (size_t i = 0; i < z->n_idle; i++)
		close_idle(&z->idle[i]);
	z->n_idle = 0;
	z->ctl = -1;
	close(ctl);
	pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->mu);
	return NULL;
}

int ps_zygote_start(struct ps_zygote *z, char *err, size_t errlen)
{
	int sv[2];
	pid_t pid;

	z->generation++;
	snprintf(z->tmp_dir, sizeof(z->tmp_dir), "%s/%s.%u", z->tmp_root, z->name,
		 z->generation);
	if (mkdir(z->tmp_dir, 0711) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir(%s): %s", z->tmp_dir, strerror(errno));
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair(AF_UNIX, SOCK_SEQPACKET): %s", strerror(errno));
		return -1;
	}
	if (spawn(z, sv[1], &pid, err, errlen) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	close(sv[1]);
	if (await_ready(z, sv[0], err, errlen) < 0) {
		close(sv[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		ps_zygote_cleanup(z);
		return -1;
	}
	pthread_mutex_lock(&z->mu);
	z->ctl = sv[0];
	z->pid = pid;
	z->reader_on = pthread_create(&z->reader, NULL, reader_main, z) == 0;
	if (!z->reader_on) {
		z->ctl = -1;
		close(sv[0]);
		snprintf(err, errlen, "pthread_create(zygote %s reader): failed", z->name);
	}
	pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->mu);
	return z->reader_on ? 0 : -1;
}

/* A dead zygote's scratch base: its workers die with it (PDEATHSIG), so the directory
 * empties within moments; retry briefly while they go. */
void ps_zygote_cleanup(struct ps_zygote *z)
{
	for (int i = 0; i < 50 && z->tmp_dir[0]; i++) {
		int ret = ps_rmtree(z->tmp_dir);

		if (ret == 0 || ret == -ENOENT)
			return;
		usleep(20000);
	}
}

/* The zygote is dead (or being killed): wake its reader (EOF) and wait for it. */
static void forget(struct ps_zygote *z)
{
	bool join;

	pthread_mutex_lock(&z->mu);
	if (z->ctl >= 0)
		shutdown(z->ctl, SHUT_RDWR);
	join = z->reader_on;
	z->reader_on = false;
	pthread_mutex_unlock(&z->mu);
	if (join)
		pthread_join(z->reader, NULL);
	pthread_mutex_lock(&z->mu);
	z->pid = -1;
	pthread_mutex_unlock(&z->mu);
}

void ps_zygote_stop(struct ps_zygote *z)
{
	pid_t pid;

	pthread_mutex_lock(&z->mu);
	pid = z->pid;
	pthread_mutex_unlock(&z->mu);
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	forget(z);
	ps_zygote_cleanup(z);
}

void ps_zygote_kill(struct ps_zygote *z)
{
	pthread_mutex_lock(&z->mu);
	if (z->pid > 0)
		kill(z->pid, SIGKILL);
	pthread_mutex_unlock(&z->mu);
}

void ps_zygote_reaped(struct ps_zygote *z)
{
	forget(z);
	ps_zygote_cleanup(z);
}

static void send_cmd(struct ps_zygote *z, const struct ps_zcmd *c)
{
	pthread_mutex_lock(&z->mu);
	if (z->ctl >= 0)
		(void)send(z->ctl, c, sizeof(*c), MSG_NOSIGNAL);
	pthread_mutex_unlock(&z->mu);
}

/* The oldest idle worker with this tag (0: a spare), waiting for one until deadline. For a
 * tag, the FORK command is sent again to a zygote that restarted meanwhile. */
static int take(struct ps_zygote *z, const struct ps_zcmd *fork_cmd, uint64_t deadline_us,
		struct ps_zidle *out)
{
	uint64_t tag = fork_cmd ? fork_cmd->tag : 0;
	unsigned gen = 0;
	int ret = -1;

	pthread_mutex_lock(&z->mu);
	for (;;) {
		struct timespec ts;
		uint64_t t;

		for (size_t i = 0; i < z->n_idle; i++) {
			if (z->idle[i].w.tag != tag)
				continue;
			*out = z->idle[i];
			memmove(&z->idle[i], &z->idle[i + 1], (z->n_idle - i - 1) * sizeof(*z->idle));
			z->n_idle--;
			ret = 0;
			goto out;
		}
		if (fork_cmd && z->ctl >= 0 && gen != z->generation) {
			gen = z->generation;
			(void)send(z->ctl, fork_cmd, sizeof(*fork_cmd), MSG_NOSIGNAL);
		}
		t = ps_now_us();
		if (t >= deadline_us)
			goto out;
		t = deadline_us;
		ts.tv_sec = (time_t)(t / 1000000);
		ts.tv_nsec = (long)(t % 1000000) * 1000;
		pthread_cond_timedwait(&z->cv, &z->mu, &ts);
	}
out:
	pthread_mutex_unlock(&z->mu);
	return ret;
}

static int verdict_status(const char *json)
{
	const char *s = strstr(json, "\"status\":\"");

	if (!s)
		return -1;
	s += 10;
	for (int i = 0; i < PS_STATUS_COUNT; i++) {
		const char *n = ps_status_name((enum ps_status)i);
		size_t l = strlen(n);

		if (!strncmp(s, n, l) && s[l] == '"')
			return i;
	}
	return -1;
}

/* Does this run need a worker forked for it: do its limits differ in what the phases
 * applied before the request (the scratch tmpfs's size; a cgroup's limits)? */
static bool needs_own_worker(const struct ps_policy *p, const struct ps_run *r)
{
	if (r->limits.scratch_bytes != p->limits.scratch_bytes)
		return true;
	return p->cgroup_parent && memcmp(&r->limits, &p->limits, sizeof(r->limits));
}

/* Set a pool worker's nice value (root only, as the zygote's spares are niced only as root),
 * if its pidfd says it has not exited, so the pid is still its. */
static void renice(const struct ps_zidle *e, int nice)
{
	struct pollfd pf = { .fd = e->fd[5], .events = POLLIN };

	if (e->w.pid > 0 && geteuid() == 0 && poll(&pf, 1, 0) == 0)
		(void)setpriority(PRIO_PROCESS, (id_t)e->w.pid, nice);
}

/* Supervise the run on a worker from the pool, here in the request's thread. */
static void run_on(struct ps_zygote *z, struct ps_zidle *e, const struct ps_policy *p,
		   const struct ps_run *r, struct ps_outcome *o)
{
	struct ps_wreq q = { .magic = PS_WREQ_MAGIC, .code_len = r->code_len, .limits = r->limits };
	struct ps_supervise_fds f = { .in = e->fd[0], .out = e->fd[1], .err = e->fd[2],
				      .status = e->fd[3], .report = e->fd[4], .pidfd = e->fd[5],
				      .life = e->fd[6],
				      /* a cgroup's figures come only with the reaping */
				      .early_exit = !p->cgroup_parent };
	size_t len = sizeof(q) + r->code_len + r->stdin_len;
	char *feed = malloc(len);

	memset(o, 0, sizeof(*o));
	snprintf(o->report_token, sizeof(o->report_token), "%s", e->w.token);
	if (!feed) {
		snprintf(o->host_error, sizeof(o->host_error), "out of memory for a %zu-byte request",
			 len);
		close_idle(e);
		return;
	}
	memcpy(feed, &q, sizeof(q));
	memcpy(feed + sizeof(q), r->code, r->code_len);
	if (r->stdin_len)
		memcpy(feed + sizeof(q) + r->code_len, r->stdin_data, r->stdin_len);
	f.feed = feed;
	f.feed_len = len;
	/* The run is foreground work from its first instruction: not after the zygote, busy
	 * forking a spare at nice 19, gets to our CLAIM. */
	renice(e, 0);
	ps_supervise(0, &f, r, ps_now_us(), o);
	/* Answered before its exit is done: what is left, tearing its address space down, is
	 * background work again. */
	if (o->self_exit)
		renice(e, 19);
	/* ps_supervise closed the five channels; the pidfd and the life pipe are ours. */
	close(e->fd[5]);
	close(e->fd[6]);
	free(feed);
	if (!o->reaped && !strstr(o->host_error, "zygote"))
		snprintf(o->host_error, sizeof(o->host_error), "zygote %s: the worker was lost",
			 z->name);
}

int ps_zygote_call(struct ps_zygote *z, const struct ps_policy *p, const struct ps_run *r,
		   struct ps_zanswer *a)
{
	uint64_t deadline = ps_now_us() + (uint64_t)RESTART_WAIT_MS * 1000;
	struct ps_zcmd c = { .magic = PS_ZCMD_MAGIC };
	struct ps_outcome o;
	struct ps_zidle e;
	bool own = needs_own_worker(p, r);

	memset(a, 0, sizeof(*a));
	a->status = -1;
	if (own) {
		c.kind = PS_ZCMD_FORK;
		c.limits = r->limits;
		c.tag = __atomic_add_fetch(&z->next_tag, 1, __ATOMIC_RELAXED);
	}
	if (take(z, own ? &c : NULL, deadline, &e) < 0) {
		snprintf(a->error, sizeof(a->error), "zygote %s: no worker in %d s (zygote down?)",
			 z->name, RESTART_WAIT_MS / 1000);
		return -1;
	}
	if (!own) {
		c.kind = PS_ZCMD_CLAIM;
		c.serial = e.w.serial;
		send_cmd(z, &c);
	}
	run_on(z, &e, p, r, &o);
	a->json = ps_verdict_render(p, r, &o, false);
	ps_outcome_free(&o);
	if (!a->json) {
		snprintf(a->error, sizeof(a->error), "rendering the verdict: out of memory");
		return -1;
	}
	a->len = strlen(a->json);
	a->status = verdict_status(a->json);
	return 0;
}

int ps_zygote_session(struct ps_zygote *z, const struct ps_limits *limits,
		      const struct ps_session_limits *sl, struct ps_session **out, char *err,
		      size_t errlen)
{
	uint64_t deadline = ps_now_us() + (uint64_t)RESTART_WAIT_MS * 1000;
	struct ps_zcmd c = { .magic = PS_ZCMD_MAGIC, .kind = PS_ZCMD_SESSION, .slot = -1 };
	struct ps_zidle e;

	c.limits = *limits;
	c.session = *sl;
	c.tag = PS_ZTAG_SESSION | __atomic_add_fetch(&z->next_tag, 1, __ATOMIC_RELAXED);
	if (take(z, &c, deadline, &e) < 0) {
		snprintf(err, errlen, "zygote %s: no session host in %d s (zygote down?)", z->name,
			 RESTART_WAIT_MS / 1000);
		return -1;
	}
	if (ps_session_adopt(e.fd[0], e.fd[1], out, err, errlen) < 0)
		return -1;
	/* a session host forked ahead of demand has the policy's limits: set the request's */
	if (ps_session_configure(*out, limits, sl, err, errlen) < 0) {
		ps_session_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}
