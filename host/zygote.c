/* Zygotes for `pysnip serve`: the front's side (spawn, call, stop) and the zygote process
 * itself (`pysnip zygote`, an internal command). See zygote.h for the protocol. */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "interp.h"
#include "result.h"
#include "util.h"
#include "worker.h"

extern char **environ;

enum { CTL_FD = 3, READY_TIMEOUT_MS = 120000, RESTART_WAIT_MS = 15000, FRAME_MAX = 512 << 20 };

/* ---------------------------------------------------------------- front side */

void ps_zygote_init(struct ps_zygote *z, const char *policy, const char *name,
		    const char *tmp_root, uint32_t layers_off, unsigned runners)
{
	memset(z, 0, sizeof(*z));
	snprintf(z->policy, sizeof(z->policy), "%s", policy);
	snprintf(z->name, sizeof(z->name), "%s", name);
	snprintf(z->tmp_root, sizeof(z->tmp_root), "%s", tmp_root);
	z->layers_off = layers_off;
	z->runners = runners ? runners : 1;
	z->pid = -1;
	z->ctl = -1;
	pthread_mutex_init(&z->mu, NULL);
}

/* The zygote's environment: ours, with TMPDIR pointing at its own scratch base. */
static char **zygote_env(const char *tmpdir, char *tmpvar, size_t len)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "TMPDIR=", 7))
			env[k++] = environ[i];
	snprintf(tmpvar, len, "TMPDIR=%s", tmpdir);
	env[k++] = tmpvar;
	return env;
}

static int spawn(struct ps_zygote *z, int child_end, pid_t *pid, char *err, size_t errlen)
{
	char lo[24], parent[24], runners[24], tmpvar[sizeof(z->tmp_dir) + 8];
	char *argv[] = { "pysnip", "zygote", "--policy", z->policy, "--layers-off", lo,
			 "--parent", parent, "--runners", runners, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char **env;
	int ret;

	snprintf(lo, sizeof(lo), "%u", z->layers_off);
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	snprintf(runners, sizeof(runners), "%u", z->runners);
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
	posix_spawn_file_actions_adddup2(&fa, child_end, CTL_FD);
	ret = posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (ret) {
		snprintf(err, errlen, "posix_spawn(/proc/self/exe zygote --policy %s): %s", z->policy,
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
	/* Usable at once: requests sent before it is ready wait in the socket. */
	pthread_mutex_lock(&z->mu);
	z->ctl = sv[0];
	z->pid = pid;
	pthread_mutex_unlock(&z->mu);
	if (await_ready(z, sv[0], err, errlen) < 0) {
		ps_zygote_stop(z);
		return -1;
	}
	return 0;
}

/* A dead zygote's scratch base: its workers die with their runners (PDEATHSIG), so the
 * directory empties within moments; retry briefly while they go. */
void ps_zygote_cleanup(struct ps_zygote *z)
{
	for (int i = 0; i < 50 && z->tmp_dir[0]; i++) {
		int ret = ps_rmtree(z->tmp_dir);

		if (ret == 0 || ret == -ENOENT)
			return;
		usleep(20000);
	}
}

void ps_zygote_stop(struct ps_zygote *z)
{
	pthread_mutex_lock(&z->mu);
	if (z->ctl >= 0)
		close(z->ctl);
	z->ctl = -1;
	if (z->pid > 0) {
		kill(z->pid, SIGKILL);
		while (waitpid(z->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	z->pid = -1;
	pthread_mutex_unlock(&z->mu);
	ps_zygote_cleanup(z);
}

void ps_zygote_kill(struct ps_zygote *z)
{
	pthread_mutex_lock(&z->mu);
	if (z->ctl >= 0)
		close(z->ctl);
	z->ctl = -1;
	if (z->pid > 0)
		kill(z->pid, SIGKILL);
	pthread_mutex_unlock(&z->mu);
}

void ps_zygote_reaped(struct ps_zygote *z)
{
	pthread_mutex_lock(&z->mu);
	if (z->ctl >= 0)
		close(z->ctl);
	z->ctl = -1;
	z->pid = -1;
	pthread_mutex_unlock(&z->mu);
	ps_zygote_cleanup(z);
}

static int remaining_ms(uint64_t deadline_us)
{
	uint64_t now = ps_now_us();

	return now >= deadline_us ? 0 : (int)((deadline_us - now + 999) / 1000);
}

/* Move len bytes over a non-blocking socket before the deadline. 0, or -1 with err. */
static int xfer(int fd, bool out, void *buf, size_t len, uint64_t deadline, char *err, size_t el)
{
	char *b = buf;

	while (len) {
		ssize_t n = out ? send(fd, b, len, MSG_NOSIGNAL) : recv(fd, b, len, 0);

		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0) {
			snprintf(err, el, "the runner closed the connection (zygote or runner died)");
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			snprintf(err, el, "%s(runner): %s (zygote or runner died)",
				 out ? "send" : "recv", strerror(errno));
			return -1;
		}
		struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		int t = remaining_ms(deadline);

		if (t == 0 || poll(&p, 1, t) == 0) {
			snprintf(err, el, "no answer from the zygote in time");
			return -1;
		}
	}
	return 0;
}

/* Hand one end of a fresh socketpair to an idle runner. */
static int pass_fd(struct ps_zygote *z, int fd, char *err, size_t errlen)
{
	char byte = 'r';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	int ret = 0;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	pthread_mutex_lock(&z->mu);
	if (z->ctl < 0) {
		snprintf(err, errlen, "the zygote for policy %s is not running", z->name);
		ret = -1;
	} else if (sendmsg(z->ctl, &m, MSG_NOSIGNAL) < 0) {
		snprintf(err, errlen, "sendmsg(zygote %s): %s", z->name, strerror(errno));
		ret = -1;
	}
	pthread_mutex_unlock(&z->mu);
	return ret;
}

/* Whether a runner took the request: it sends one byte before reading anything. */
static bool taken_by_runner(int fd)
{
	char ack;

	return recv(fd, &ack, 1, MSG_DONTWAIT) == 1 && ack == PS_ZACK;
}

enum { CALL_OK = 0, CALL_FAILED = -1, CALL_NOT_TAKEN = -2 };

/* One attempt on the current zygote. CALL_NOT_TAKEN: no runner ever saw the request (the
 * zygote died or is restarting), so it may be sent again; CALL_FAILED: a runner had it. */
static int attempt(struct ps_zygote *z, const struct ps_zreq *h, const char *code,
		   const char *stdin_data, uint64_t deadline, struct ps_zanswer *a)
{
	char *e = a->error;
	size_t el = sizeof(a->error);
	struct ps_zresp resp;
	int sv[2], ret = CALL_NOT_TAKEN;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
		snprintf(e, el, "socketpair(): %s", strerror(errno));
		return CALL_FAILED;
	}
	if (pass_fd(z, sv[1], e, el) < 0)
		goto out;
	close(sv[1]);
	sv[1] = -1;
	if (xfer(sv[0], true, (void *)h, sizeof(*h), deadline, e, el) < 0 ||
	    xfer(sv[0], true, (void *)code, h->code_len, deadline, e, el) < 0 ||
	    xfer(sv[0], true, (void *)stdin_data, h->stdin_len, deadline, e, el) < 0) {
		ret = taken_by_runner(sv[0]) ? CALL_FAILED : CALL_NOT_TAKEN;
		goto out;
	}
	{
		char ack = 0;

		if (xfer(sv[0], false, &ack, 1, deadline, e, el) < 0)
			goto out;	/* no runner ever answered: not taken */
	}
	ret = CALL_FAILED;
	if (xfer(sv[0], false, &resp, sizeof(resp), deadline, e, el) < 0)
		goto out;
	if (resp.magic != PS_ZRESP_MAGIC || resp.len > FRAME_MAX) {
		snprintf(e, el, "the runner sent a malformed answer");
		goto out;
	}
	a->json = malloc(resp.len + 1);
	if (!a->json) {
		snprintf(e, el, "out of memory for a %llu-byte verdict", (unsigned long long)resp.len);
		goto out;
	}
	if (xfer(sv[0], false, a->json, resp.len, deadline, e, el) < 0) {
		free(a->json);
		a->json = NULL;
		goto out;
	}
	a->json[resp.len] = '\0';
	a->len = resp.len;
	a->status = resp.status;
	ret = CALL_OK;
out:
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	return ret;
}

int ps_zygote_call(struct ps_zygote *z, const struct ps_zreq *h, const char *code,
		   const char *stdin_data, uint64_t timeout_ms, struct ps_zanswer *a)
{
	uint64_t deadline = ps_now_us() + timeout_ms * 1000;
	uint64_t restart_deadline = ps_now_us() + RESTART_WAIT_MS * 1000;
	int ret;

	memset(a, 0, sizeof(*a));
	a->status = -1;
	/* A request no runner took is sent again once the zygote is back (briefly waited
	 * for): only runs already in a runner's hands get internal_error. */
	while ((ret = attempt(z, h, code, stdin_data, deadline, a)) == CALL_NOT_TAKEN) {
		if (ps_now_us() >= restart_deadline)
			break;
		usleep(10000);
	}
	return ret == CALL_OK ? 0 : -1;
}

/* ---------------------------------------------------------------- zygote side */

struct zyg {
	struct ps_policy p;
	struct ps_worker w;
	pid_t self;
	int taken[2];		/* runners write their pid here when they take a request */
	int sigfd;
	sigset_t oldmask;
	struct runner {
		pid_t pid;	/* as the zygote sees it */
		uint64_t serial;	/* as the runner names itself (its own getpid() is in the
				 * runs' PID namespace, not ours) */
		bool busy;	/* took a request */
	} *runners;		/* alive, idle or busy */
	unsigned nlive, want;
	uint64_t serial;	/* of the runner being forked */
	unsigned idle_deaths;	/* idle runners that died since one was last taken */
};

static int read_full(int fd, void *buf, size_t len)
{
	char *b = buf;

	while (len) {
		ssize_t n = read(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
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

/* One request on conn: read the frame, run it, answer. Runs in the runner (a fresh fork of
 * the single-threaded zygote, so malloc and stdio are fine here). */
static void serve_one(struct zyg *z, int conn)
{
	struct ps_zreq h;
	struct ps_run r = { 0 };
	struct ps_outcome o;
	struct ps_zresp resp = { .magic = PS_ZRESP_MAGIC };
	char *code = NULL, *in = NULL, *json;
	int ret;

	if (read_full(conn, &h, sizeof(h)) < 0 || h.magic != PS_ZREQ_MAGIC ||
	    h.code_len > FRAME_MAX || h.stdin_len > FRAME_MAX)
		return;
	code = malloc(h.code_len + 1);
	in = malloc(h.stdin_len + 1);
	if (!code || !in || read_full(conn, code, h.code_len) < 0 ||
	    read_full(conn, in, h.stdin_len) < 0)
		return;
	code[h.code_len] = '\0';
	r.code = code;
	r.code_len = h.code_len;
	r.stdin_data = h.stdin_len ? in : NULL;
	r.stdin_len = h.stdin_len;
	r.limits = h.limits;
	r.slot = h.slot;
	ret = ps_worker_run(&z->w, &r, &o);
	if (ret < 0 && !o.host_error[0])
		snprintf(o.host_error, sizeof(o.host_error), "worker: %s", strerror(-ret));
	json = ps_verdict_render(&z->p, &r, &o, false);
	if (!json)
		json = ps_verdict_internal_error(&z->p, "rendering the verdict: out of memory", false);
	if (!json)
		return;
	resp.len = strlen(json);
	resp.status = verdict_status(json);
	(void)ps_write_all(conn, &resp, sizeof(resp));
	(void)ps_write_all(conn, json, resp.len);
}

static int recv_fd(int ctl)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	do
		n = recvmsg(ctl, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -2;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static __attribute__((noreturn)) void runner_main(struct zyg *z)
{
	int conn;

	pid_t ppid;

	/* Die with the zygote: its death must end our run (the front answers internal_error).
	 * getppid() is 0 when the zygote entered a PID namespace for its runs (we are inside,
	 * it is not); then the namespace's init dies with the zygote and takes us along. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(0);
	ppid = getppid();
	if (ppid != z->self && ppid != 0)
		_exit(0);
	close(z->sigfd);
	close(z->taken[0]);
	sigprocmask(SIG_SETMASK, &z->oldmask, NULL);
	signal(SIGPIPE, SIG_IGN);
	do
		conn = recv_fd(CTL_FD);
	while (conn == -2);
	if (conn < 0)
		_exit(0);	/* the front closed the control socket */
	/* Tell the front this request is ours before anything can fail: a request that no
	 * runner acknowledged may be sent again, one acknowledged may not. */
	(void)send(conn, (char[]){ PS_ZACK }, 1, MSG_NOSIGNAL);
	(void)ps_write_all(z->taken[1], &z->serial, sizeof(z->serial));
	close(z->taken[1]);
	close(CTL_FD);
	fcntl(conn, F_SETFL, 0);
	serve_one(z, conn);
	_exit(0);
}

static void fork_runners(struct zyg *z)
{
	/* Replaced when they end, not when taken: the fork then happens after the answer went
	 * out, not while the run it would compete with for the CPU is going on. The front runs
	 * at most `workers` at once and gives us workers + 1, so one is always idle. */
	while (z->nlive < z->want) {
		pid_t pid;

		z->serial++;
		pid = fork();

		if (pid < 0) {
			ps_err("zygote %s: fork(runner): %s", z->p.name, strerror(errno));
			return;
		}
		if (pid == 0)
			runner_main(z);
		z->runners[z->nlive++] = (struct runner){ .pid = pid, .serial = z->serial };
	}
}

static void mark_taken(struct zyg *z, uint64_t serial)
{
	for (unsigned i = 0; i < z->nlive; i++)
		if (z->runners[i].serial == serial)
			z->runners[i].busy = true;
}

/* A child ended: true if it was a runner that never took a request. */
static bool reaped(struct zyg *z, pid_t pid)
{
	for (unsigned i = 0; i < z->nlive; i++) {
		if (z->runners[i].pid == pid) {
			bool idle = !z->runners[i].busy;

			z->runners[i] = z->runners[--z->nlive];
			return idle;
		}
	}
	return false;
}

/* Single-threaded loop: replace runners as they are taken, reap them as they end. */
static __attribute__((noreturn)) void zygote_loop(struct zyg *z)
{
	struct pollfd p[2] = { { .fd = z->taken[0], .events = POLLIN },
			       { .fd = z->sigfd, .events = POLLIN } };

	for (;;) {
		fork_runners(z);
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(PS_EXIT_INTERNAL);
		if (p[0].revents & POLLIN) {
			uint64_t taken[64];
			ssize_t n = read(z->taken[0], taken, sizeof(taken));

			for (ssize_t i = 0; i < n / (ssize_t)sizeof(taken[0]); i++)
				mark_taken(z, taken[i]);
			z->idle_deaths = 0;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			pid_t pid;

			while (read(z->sigfd, &si, sizeof(si)) > 0)
				;
			/* An idle runner that died took no request with it; many in a row
			 * mean runners cannot live here: stop rather than spin (the front
			 * restarts us). */
			while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
				if (reaped(z, pid) && ++z->idle_deaths > 100) {
					ps_err("zygote %s: runners keep dying before any request",
					       z->p.name);
					_exit(PS_EXIT_INTERNAL);
				}
			}
		}
	}
}

/* Load, initialise and prepare: everything the runs share. 0, or -1 with err. */
static int zygote_setup(struct zyg *z, const char *policy, uint32_t layers_off, char *err,
			size_t errlen)
{
	struct ps_strlist modules = { 0 };
	struct ps_interp_opts io = { 0 };
	int ret = -1;

	if (ps_policy_load(policy, &z->p, err, errlen) < 0)
		return -1;
	if (ps_policy_modules(&z->p, &modules, err, errlen) < 0)
		return -1;
	io.policy = &z->p;
	io.modules = &modules;
	io.python_layer = !(layers_off & (1u << PS_LAYER_PYTHON)) &&
			  z->p.layers[PS_LAYER_PYTHON] != PS_LAYER_OFF;
	io.preimport = true;
	if (ps_interp_init(&io, err, errlen) == 0 &&
	    ps_worker_prepare(&z->w, &z->p, layers_off, err, errlen) == 0)
		ret = 0;
	ps_strlist_free(&modules);
	return ret;
}

static const char *arg_value(int argc, char **argv, const char *name)
{
	for (int i = 0; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return NULL;
}

int ps_cmd_zygote(int argc, char **argv)
{
	const char *policy = arg_value(argc, argv, "--policy");
	const char *lo = arg_value(argc, argv, "--layers-off");
	const char *parent = arg_value(argc, argv, "--parent");
	const char *runners = arg_value(argc, argv, "--runners");
	struct zyg z = { 0 };
	char err[1024];
	sigset_t chld;

	if (!policy || !lo || !parent || !runners || fcntl(CTL_FD, F_GETFD) < 0) {
		ps_err("zygote: internal command, started by `pysnip serve` only");
		return PS_EXIT_USAGE;
	}
	/* Die with the front; nothing of ours may outlive it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != (pid_t)atoi(parent))
		return PS_EXIT_INTERNAL;
	syscall(SYS_close_range, CTL_FD + 1, ~0U, 0);
	z.self = getpid();
	z.want = (unsigned)atoi(runners);
	if (z.want < 1)
		z.want = 1;
	z.runners = calloc(z.want, sizeof(*z.runners));
	if (!z.runners || zygote_setup(&z, policy, (uint32_t)strtoul(lo, NULL, 10), err,
				    sizeof(err)) < 0) {
		if (!z.runners)
			snprintf(err, sizeof(err), "zygote %s: out of memory", policy);
		(void)send(CTL_FD, err, strlen(err), MSG_NOSIGNAL);
		return PS_EXIT_INTERNAL;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &z.oldmask);
	z.sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (z.sigfd < 0 || pipe2(z.taken, O_CLOEXEC) < 0) {
		snprintf(err, sizeof(err), "zygote %s: signalfd/pipe2: %s", policy, strerror(errno));
		(void)send(CTL_FD, err, strlen(err), MSG_NOSIGNAL);
		return PS_EXIT_INTERNAL;
	}
	fcntl(z.taken[0], F_SETFL, O_NONBLOCK);
	fork_runners(&z);
	if (send(CTL_FD, "ok", 2, MSG_NOSIGNAL) < 0)
		return PS_EXIT_INTERNAL;
	zygote_loop(&z);
}
