/* Zygotes for `pysnip serve`, the front's side: spawn, call, stop. The zygote process itself
 * is zygote_proc.c. See zygote.h for the protocol. */
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accept.h"
#include "run/procstat.h"
#include "run/result.h"
#include "util/util.h"
#include "run/worker.h"

extern char **environ;

enum {
	READY_TIMEOUT_MS = 120000,
	RESTART_WAIT_MS = 15000,
	FRAME_MAX = 512 << 20,
	RESEND_WAIT_US = 100000,	/* a lost worker forked for a request is asked for again after */
};

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

/* What of our environment a zygote gets: only what pysnip itself reads (the data
 * directories, debugging, the Landlock ABI cap of the tests, the sanitizers' options). Every worker is a fork of the zygote, and
 * the strings the kernel copies at exec live on its stack (it overwrites them after setup,
 * zygote.c; this keeps a token or a path of the front's out of it in the first place). */
static const char *const zygote_env_keep[] = {
	"PYSNIP_POLICY_DIR=", "PYSNIP_ALLOW_DIR=", "PYSNIP_DEBUG=", "PYSNIP_LANDLOCK_MAX_ABI=",
	"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=",
};

/* The zygote's environment: the above, TMPDIR pointing at its own scratch base, and
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
		for (size_t j = 0; j < PS_ARRAY_LEN(zygote_env_keep); j++)
			if (!strncmp(environ[i], zygote_env_keep[j], strlen(zygote_env_keep[j])))
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
	 * exec. The zygote starts clean, in a process group of its own: a signal to the
	 * server's group (`kill -TERM -PGID`, a terminal's ^C) is meant for the front, which
	 * drains; the zygote ends with the front (PDEATHSIG, its control socket's EOF). */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP);
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

	memset(&e->w, 0, sizeof(e->w));
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
		if (r < 0) {
			/* What did arrive is closed: the worker reads EOF and exits, and the zygote,
			 * reaping a spare nobody claimed, forks another. One forked for a request
			 * is that request's to ask for again (take()). */
			ps_serve_log("zygote %s: worker %llu%s: its descriptors did not all arrive "
				     "(out of descriptors?); dropped", z->name,
				     (unsigned long long)e.w.serial, e.w.tag ? " (forked for a request)"
				     : ", a spare (the zygote replaces it)");
			pthread_mutex_lock(&z->mu);
			z->lost++;
			if (e.w.magic == PS_ZWORKER_MAGIC && e.w.tag &&
			    z->n_dropped < PS_ARRAY_LEN(z->dropped))
				z->dropped[z->n_dropped++] = e.w.tag;
			pthread_cond_broadcast(&z->cv);
			pthread_mutex_unlock(&z->mu);
			continue;
		}
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

/* Was the worker forked for this tag lost on its way (reader_main)? Forgets it. z->mu held. */
static bool was_dropped(struct ps_zygote *z, uint64_t tag)
{
	for (unsigned i = 0; i < z->n_dropped; i++) {
		if (z->dropped[i] != tag)
			continue;
		z->dropped[i] = z->dropped[--z->n_dropped];
		return true;
	}
	return false;
}

/* Has a rehearsed spare said it is ready (PS_REC_READY on its status pipe)? Until then it
 * is drawing its figure, and a request handed to it would wait for the rest of that. */
static bool rehearsed_ready(const struct ps_zidle *e)
{
	struct pollfd p = { .fd = e->fd[3], .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* Which idle worker a request gets: with a tag, the one forked for it; else a spare, for a
 * snippet that names the libraries (rehearsed) one that rehearsed a figure and said it is
 * ready, for any other a plain one; failing that, the other kind, and a rehearsed spare
 * still rehearsing last. The oldest of a rank first. -1: none. */
static ssize_t pick(const struct ps_zygote *z, uint64_t tag, bool rehearsed)
{
	ssize_t best = -1;
	int best_rank = 4;

	for (size_t i = 0; i < z->n_idle; i++) {
		const struct ps_zidle *e = &z->idle[i];
		int rank;

		if (e->w.tag != tag)
			continue;
		if (tag)
			return (ssize_t)i;
		if (!e->w.rehearsed)
			rank = rehearsed ? 1 : 0;
		else if (rehearsed_ready(e))
			rank = rehearsed ? 0 : 1;
		else
			rank = 2;
		if (rank < best_rank) {
			best = (ssize_t)i;
			best_rank = rank;
			if (rank == 0)
				break;
		}
	}
	return best;
}

/* An idle worker with this tag (0: a spare), as pick chooses, waiting for one until
 * deadline. For a tag, the FORK command is sent again to a zygote that restarted
 * meanwhile, or when the worker it forked was lost on its way. */
static int take(struct ps_zygote *z, const struct ps_zcmd *fork_cmd, bool rehearsed,
		uint64_t deadline_us, struct ps_zidle *out)
{
	uint64_t tag = fork_cmd ? fork_cmd->tag : 0, resend_us = 0;
	unsigned gen = 0;
	int ret = -1;

	pthread_mutex_lock(&z->mu);
	for (;;) {
		struct timespec ts;
		uint64_t t = ps_now_us(), until = deadline_us;

		ssize_t i = pick(z, tag, rehearsed);

		if (i >= 0) {
			*out = z->idle[i];
			memmove(&z->idle[i], &z->idle[i + 1],
				(z->n_idle - (size_t)i - 1) * sizeof(*z->idle));
			z->n_idle--;
			ret = 0;
			goto out;
		}
		/* asked again after a loss, not at once: what made the front drop it may hold */
		if (fork_cmd && !resend_us && was_dropped(z, tag))
			resend_us = t + RESEND_WAIT_US;
		if (fork_cmd && z->ctl >= 0 &&
		    (gen != z->generation || (resend_us && t >= resend_us))) {
			gen = z->generation;
			resend_us = 0;
			(void)send(z->ctl, fork_cmd, sizeof(*fork_cmd), MSG_NOSIGNAL);
		}
		if (t >= deadline_us)
			goto out;
		if (resend_us && resend_us < until)
			until = resend_us;
		ts.tv_sec = (time_t)(until / 1000000);
		ts.tv_nsec = (long)(until % 1000000) * 1000;
		pthread_cond_timedwait(&z->cv, &z->mu, &ts);
	}
out:
	if (ret < 0 && fork_cmd)
		(void)was_dropped(z, tag);
	pthread_mutex_unlock(&z->mu);
	return ret;
}

/* Does the snippet name a library whose work a rehearsed spare has done once (a figure drawn
 * with numpy's arrays, rendered to PNG with Pillow beside)? Its first 64 KiB are read: where
 * its imports are. A name in a string or a comment counts too; it only picks the spare. */
static bool names_a_plotting_library(const struct ps_run *r)
{
	static const char *const names[] = { "matplotlib", "numpy", "pandas", "PIL" };
	size_t len = r->code_len < 65536 ? r->code_len : 65536;

	for (size_t i = 0; i < PS_ARRAY_LEN(names); i++)
		if (memmem(r->code, len, names[i], strlen(names[i])))
			return true;
	return false;
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

/* The run starts on the CPU this thread runs on: the request, the report and the exit
 * record then pass between two processes of one CPU, where each wakeup is a switch; on the
 * scheduler's own choice the worker is woken on an idle CPU, and in a VM an idle vCPU is
 * halted, so that each hop could wait for the hypervisor (tens of us to over a ms). After
 * PIN_US the run has every CPU (supervise.c, widen): a long run is not held to one. Only a
 * run alone in the front is pinned: beside others, the scheduler's spreading them over the
 * CPUs is worth more than the hops (bench_serve's throughput). */
enum { PIN_US = 3000 };
static unsigned runs_in_flight;	/* (atomic) */

/* A worker from the pool is handed a request only alive and running: not dead, not stopped
 * (SIGSTOP from whoever could signal its uid, a tracer). Its /proc/PID/stat, opened here while
 * it is known alive, is kept for the run (supervise.c: the exit record's check). The fd, or
 * -1 with *ok false: the worker is no use; it is killed (the zygote reaps it and forks a
 * replacement). */
static int usable(const struct ps_zidle *e, bool *ok, bool *details)
{
	struct ps_procstat st;
	int fd = e->w.pid > 0 ? ps_procstat_open(e->w.pid, e->fd[5]) : -ESRCH;

	*ok = true;
	*details = false;
	/* Out of descriptors is the front's state, not the worker's: it is handed out without
	 * the check's descriptor (so without the early answer: the run ends by the reaping). */
	if (fd == -EMFILE || fd == -ENFILE)
		return -1;
	if (fd >= 0 && ps_procstat_read(fd, &st) == 0 && !ps_procstat_unusable(&st)) {
		*details = st.details;
		return fd;
	}
	*ok = false;
	if (fd >= 0)
		close(fd);
	(void)syscall(SYS_pidfd_send_signal, e->fd[5], SIGKILL, NULL, 0);
	return -1;
}

/* Supervise the run on a worker from the pool, here in the request's thread. */
static void run_on(struct ps_zygote *z, struct ps_zidle *e, int procstat, bool details,
		   const struct ps_policy *p, const struct ps_run *r, struct ps_outcome *o)
{
	struct ps_wreq q = { .magic = PS_WREQ_MAGIC, .n_inputs = (uint32_t)r->n_inputs,
			     .code_len = r->code_len, .limits = r->limits };
	struct ps_supervise_fds f = { .in = e->fd[0], .out = e->fd[1], .err = e->fd[2],
				      .status = e->fd[3], .report = e->fd[4], .pidfd = e->fd[5],
				      .life = e->fd[6], .procstat = procstat,
				      /* a cgroup's figures come only with the reaping; with
				       * threads, the exit's status must be in view */
				      .early_exit = !p->cgroup_parent && (!p->threads || details),
				      .threads = p->threads };
	size_t len = sizeof(q) + r->code_len + r->stdin_len, at;
	char *feed;

	for (size_t i = 0; i < r->n_inputs; i++)
		len += sizeof(struct ps_wreq_file) + strlen(r->inputs[i].name) + r->inputs[i].len;
	feed = malloc(len);

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
	at = sizeof(q) + r->code_len;
	for (size_t i = 0; i < r->n_inputs; i++) {	/* the request's files: worker.c reads them */
		struct ps_wreq_file h = { .name_len = (uint32_t)strlen(r->inputs[i].name),
					  .len = r->inputs[i].len };

		memcpy(feed + at, &h, sizeof(h));
		memcpy(feed + at + sizeof(h), r->inputs[i].name, h.name_len);
		memcpy(feed + at + sizeof(h) + h.name_len, r->inputs[i].data, r->inputs[i].len);
		at += sizeof(h) + h.name_len + r->inputs[i].len;
	}
	if (r->stdin_len)
		memcpy(feed + at, r->stdin_data, r->stdin_len);
	f.feed = feed;
	f.feed_len = len;
	/* The run is foreground work from its first instruction: not after the zygote, busy
	 * forking a spare at nice 19, gets to our CLAIM. */
	renice(e, 0);
	cpu_set_t all;

	bool alone = __atomic_fetch_add(&runs_in_flight, 1, __ATOMIC_RELAXED) == 0;

	if (geteuid() == 0)
		f.idle_exit_pid = e->w.pid;

	if (alone && sched_getaffinity(0, sizeof(all), &all) == 0 && ps_pin_here(e->w.pid, &all)) {
		f.pinned = e->w.pid;
		f.widen_us = ps_now_us() + PIN_US;
		f.cpus = &all;
	}
	ps_supervise(0, &f, r, ps_now_us(), o);
	__atomic_fetch_sub(&runs_in_flight, 1, __ATOMIC_RELAXED);
	/* Answered before its exit is done: what is left, tearing its address space down, is
	 * background work again. */
	if (o->self_exit)
		renice(e, 19);
	/* ps_supervise closed the five channels; the pidfd, the life pipe and /proc are ours. */
	close(e->fd[5]);
	close(e->fd[6]);
	close(procstat);
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
	bool own = needs_own_worker(p, r), rehearsed = names_a_plotting_library(r);
	int procstat;
	bool details;

	memset(a, 0, sizeof(*a));
	a->status = -1;
	if (own) {
		c.kind = PS_ZCMD_FORK;
		c.limits = r->limits;
		c.tag = __atomic_add_fetch(&z->next_tag, 1, __ATOMIC_RELAXED);
	}
	for (;;) {
		if (take(z, own ? &c : NULL, rehearsed, deadline, &e) < 0) {
			snprintf(a->error, sizeof(a->error), "zygote %s: no worker in %d s (zygote "
				 "down?)", z->name, RESTART_WAIT_MS / 1000);
			return -1;
		}
		bool ok;

		if ((procstat = usable(&e, &ok, &details)) >= 0 || ok)
			break;
		/* never claimed: the zygote counts it as a spare lost, and replaces it */
		close_idle(&e);
		if (own)	/* ask again for the one forked for us */
			c.tag = __atomic_add_fetch(&z->next_tag, 1, __ATOMIC_RELAXED);
	}
	if (!own) {
		c.kind = PS_ZCMD_CLAIM;
		c.serial = e.w.serial;
		send_cmd(z, &c);
	}
	run_on(z, &e, procstat, details, p, r, &o);
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
	if (take(z, &c, false, deadline, &e) < 0) {
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
