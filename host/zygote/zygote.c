/* The zygote process (`pysnip zygote`, an internal command started by `pysnip serve`): it
 * initialises the interpreter once, keeps workers forked ahead of demand and reaps them. It
 * runs from the `pysnip` binary, not `pysnip-serve`: without the HTTP and TLS libraries the
 * front needs, it maps about half as many areas, and every fork and every worker's exit walks
 * all of them. See zygote.h for the protocol. */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "python/interp.h"
#include "run/procstat.h"
#include "run/result.h"
#include "util/util.h"
#include "run/worker.h"

struct zw {
	struct ps_worker_proc proc;
	struct ps_outcome o;	/* only cgroup_used and the token: the run is the front's */
	int life;		/* write end: the struct ps_reaped goes here */
	unsigned slot;
	uint64_t serial;
	bool claimed;		/* a request has it: running, or about to (a FORK's from birth) */
	bool rehearsed;		/* a spare forked to rehearse (ps_worker.rehearse) */
};

struct zyg {
	struct ps_policy p;
	struct ps_worker w;
	struct zw *ws;		/* live workers: idle in the front's pool or running */
	size_t n, cap;
	unsigned spare;		/* spares to keep unclaimed */
	unsigned unclaimed;	/* live spares not claimed yet: the workers with !claimed */
	unsigned rehearse;	/* rehearsed spares to keep unclaimed besides (0: no matplotlib) */
	unsigned unclaimed_r;	/* the rehearsed ones among the unclaimed */
	uint64_t serial;
	unsigned lost;		/* spares in a row that died unclaimed (the front dropped them) */
	uint64_t hold_until_us;	/* no spare is forked before: backing off after a loss */
	struct zsess {
		pid_t pid;
		int pidfd;
		bool spare;	/* forked ahead of demand; its socket is spare_sock */
	} *sess;		/* served sessions' hosts (our children): to reap */
	size_t n_sess, cap_sess;
	int spare_sock;		/* -1: no session host forked ahead */
	bool sessions_wanted;	/* a session was asked for: keep one forked ahead */
	uint64_t spare_session_at_us;	/* the next one not before (after a hand-out) */
};

/* A spare session host handed out: the request's path on (the front adopts it, configures
 * it, answers) takes a fraction of this; its replacement is forked after it, not on the
 * CPU the front was just woken on (perf sched: the fork and the new host's start, 1.3 ms
 * each, held the front's answer up). */
enum { SPARE_SESSION_DELAY_US = 3000 };

/* The lowest free slot, preferring one whose uid (a policy's uid range) no live worker has,
 * so that concurrent runs get distinct uids where the range allows. */
static unsigned pick_slot(const struct zyg *z)
{
	unsigned mod = z->p.uid_count > 1 ? (unsigned)z->p.uid_count : ~0u;

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned s = 0;; s++) {
			bool used = false;

			for (size_t i = 0; i < z->n && !used; i++)
				used = pass == 0 ? z->ws[i].slot % mod == s % mod : z->ws[i].slot == s;
			if (!used)
				return s;
			if (pass == 0 && s + 1 >= mod)
				break;
		}
	}
	return 0;
}

/* One message to the front with descriptors passed alongside (SCM_RIGHTS). 0 or -errno. */
static int send_to_front(struct ps_zworker *m, const int *fds, size_t nfds)
{
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	union {
		char buf[CMSG_SPACE(sizeof(int) * PS_ZWORKER_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	if (nfds > PS_ZWORKER_FDS)
		return -EINVAL;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	return sendmsg(PS_ZYGOTE_CTL_FD, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int announce(const struct zw *w, uint64_t tag, int life_r)
{
	struct ps_zworker m = { .magic = PS_ZWORKER_MAGIC, .slot = w->slot, .serial = w->serial,
				.tag = tag, .pid = w->proc.pid, .rehearsed = w->rehearsed };
	int fds[PS_ZWORKER_FDS] = { w->proc.f.in, w->proc.f.out, w->proc.f.err, w->proc.f.status,
				    w->proc.f.report, w->proc.f.pidfd, life_r };
	int ret;

	snprintf(m.token, sizeof(m.token), "%s", w->o.report_token);
	ret = send_to_front(&m, fds, PS_ZWORKER_FDS);
	explicit_bzero(m.token, sizeof(m.token));
	return ret;
}

/* Fork one worker with limits l and hand it to the front; rehearsed: a spare that rehearses
 * before its request. */
static int fork_worker(struct zyg *z, const struct ps_limits *l, uint64_t tag, bool rehearsed)
{
	struct zw w = { .slot = pick_slot(z), .serial = ++z->serial, .life = -1, .claimed = tag != 0,
			.rehearsed = rehearsed };
	int life[2] = { -1, -1 }, ret;

	if (z->n == z->cap) {
		size_t cap = z->cap ? 2 * z->cap : 16;
		struct zw *nw = realloc(z->ws, cap * sizeof(*nw));

		if (!nw)
			return -ENOMEM;
		z->ws = nw;
		z->cap = cap;
	}
	/* A spare is background work: even its fork runs at the spares' priority, so that it
	 * yields to the runs in flight (root only: we need the priority back). */
	if (z->w.ahead_nice && !tag)
		(void)setpriority(PRIO_PROCESS, 0, z->w.ahead_nice);
	z->w.rehearse = rehearsed;
	ret = ps_worker_spawn(&z->w, l, NULL, w.slot, &w.proc, &w.o);
	z->w.rehearse = false;
	if (z->w.ahead_nice && !tag)
		(void)setpriority(PRIO_PROCESS, 0, 0);
	if (ret < 0) {
		ps_err("zygote %s: %s", z->p.name, w.o.host_error);
		return ret;
	}
	/* After the fork: the worker must not hold the write end (its EOF means we died). */
	if (w.proc.f.pidfd < 0 || pipe2(life, O_CLOEXEC) < 0 || (ret = announce(&w, tag, life[0])) < 0) {
		ps_err("zygote %s: handing a worker to the front: %s", z->p.name,
		       strerror(ret < 0 ? -ret : errno));
		kill(w.proc.pid, SIGKILL);
		while (waitpid(w.proc.pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (life[0] >= 0) {
			close(life[0]);
			close(life[1]);
		}
		explicit_bzero(w.o.report_token, sizeof(w.o.report_token));
		ps_worker_cleanup(&w.proc, &w.o);
		return -EIO;
	}
	close(life[0]);
	/* The token is the front's now. Every later worker is forked from this memory: a
	 * snippet with native code could read the tokens of the runs alive beside it. */
	explicit_bzero(w.o.report_token, sizeof(w.o.report_token));
	/* The front holds the channels now; we keep the pidfd (to reap) and life. */
	close(w.proc.f.in);
	close(w.proc.f.out);
	close(w.proc.f.err);
	close(w.proc.f.status);
	close(w.proc.f.report);
	w.proc.f.in = w.proc.f.out = w.proc.f.err = w.proc.f.status = w.proc.f.report = -1;
	w.life = life[1];
	z->ws[z->n++] = w;
	return 0;
}

/* A served session: a child of ours becomes its session host, from our initialised
 * interpreter (no start of its own). Returns the socket to it (and its pid, reaped by us
 * through its pidfd in z->sess), or -1. */
/* Python's SIGINT handler (KeyboardInterrupt), saved before the zygote ignores SIGINT: a
 * session host forked from us needs it back for its cells' interrupts. */
static struct sigaction py_sigint;

static int spawn_session(struct zyg *z, const struct ps_limits *l,
			 const struct ps_session_limits *sl, int slot, bool ahead, struct zsess **out)
{
	int sv[2], pidfd;
	pid_t pid;

	if (z->n_sess == z->cap_sess) {
		size_t cap = z->cap_sess ? 2 * z->cap_sess : 16;
		struct zsess *ns = realloc(z->sess, cap * sizeof(*ns));

		if (!ns)
			return -1;
		z->sess = ns;
		z->cap_sess = cap;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		/* its fd 3 is the front's socket (no longer our control socket); nothing else of
		 * ours (other workers' channels, life pipes, a spare session's socket) stays open */
		if (dup2(sv[1], PS_ZYGOTE_CTL_FD) < 0)
			_exit(PS_EXIT_INTERNAL);
		syscall(SYS_close_range, PS_ZYGOTE_CTL_FD + 1, ~0U, 0);
		/* a session's interrupt is SIGINT -> KeyboardInterrupt: Python's handler again */
		sigaction(SIGINT, &py_sigint, NULL);
		_exit(ps_session_host_run(&z->p, z->w.layers_off, z->w.shared_scratch, l, sl, slot));
	}
	/* Forked ahead: its start (the holder's phases) is background work that yields at once
	 * to any other (nice 19 alone kept the CPU for its slice); fork_session puts it back
	 * when a request claims it. Set here, not by the child: a child not yet scheduled would
	 * set it after a claim had put it back, and the session would run at idle priority.
	 * Root only, as ahead_nice. */
	if (pid > 0 && ahead && z->w.ahead_nice)
		(void)sched_setscheduler(pid, SCHED_IDLE, &(struct sched_param){ 0 });
	close(sv[1]);
	pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (pidfd < 0) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		close(sv[0]);
		return -1;
	}
	z->sess[z->n_sess] = (struct zsess){ pid, pidfd, false };
	*out = &z->sess[z->n_sess++];
	return sv[0];
}

/* The socket (closed here: the front holds it now) and pidfd of a session host, to the
 * front, as the answer to the PS_ZCMD_SESSION with this tag. */
static void hand_session(const struct zsess *e, int sock, uint64_t tag)
{
	struct ps_zworker m = { .magic = PS_ZWORKER_MAGIC, .tag = tag, .pid = e->pid };
	int fds[PS_ZSESSION_FDS] = { sock, e->pidfd };

	if (send_to_front(&m, fds, PS_ZSESSION_FDS) < 0)
		kill(e->pid, SIGKILL);	/* reaped like any other */
	close(sock);
}

/* Whether a session host forked ahead with the policy's limits serves a request for these:
 * the limits its holder's phases applied (memory is the session's) must be the same; the
 * rest the front sets before the first cell (ps_session_configure). */
static bool spare_fits(const struct zyg *z, const struct ps_limits *l)
{
	const struct ps_limits *p = &z->p.limits;

	return l->memory_bytes == p->memory_bytes && l->file_size_bytes == p->file_size_bytes &&
	       l->open_files == p->open_files && l->processes == p->processes &&
	       l->scratch_bytes == p->scratch_bytes;
}

static void fork_session(struct zyg *z, const struct ps_zcmd *c)
{
	struct zsess *e = NULL;
	int sock;

	z->sessions_wanted = true;	/* from now on one is kept forked ahead */
	if (z->spare_sock >= 0 && spare_fits(z, &c->limits)) {
		for (size_t i = 0; i < z->n_sess; i++)
			if (z->sess[i].spare)
				e = &z->sess[i];
		if (e) {
			e->spare = false;
			/* not yet reaped, so the pid is still its: foreground work from now on */
			if (z->w.ahead_nice) {
				(void)sched_setscheduler(e->pid, SCHED_OTHER,
							 &(struct sched_param){ 0 });
				(void)setpriority(PRIO_PROCESS, (id_t)e->pid, 0);
			}
			hand_session(e, z->spare_sock, c->tag);
			z->spare_sock = -1;
			z->spare_session_at_us = ps_now_us() + SPARE_SESSION_DELAY_US;
			return;
		}
	}
	sock = spawn_session(z, &c->limits, &c->session, c->slot, false, &e);
	if (sock >= 0)
		hand_session(e, sock, c->tag);
}

/* One session host forked ahead of demand, with the policy's limits: a request then costs
 * no fork, no filter build, no namespace and no holder start. */
static void keep_spare_session(struct zyg *z)
{
	struct ps_session_limits none = { 0 };
	struct zsess *e;

	if (!z->sessions_wanted || z->spare_sock >= 0 || ps_now_us() < z->spare_session_at_us)
		return;
	/* background work, as a worker spare: its fork and its start (the holder's phases) at
	 * the spares' priority, so that they yield to the session just handed out */
	if (z->w.ahead_nice)
		(void)setpriority(PRIO_PROCESS, 0, z->w.ahead_nice);
	z->spare_sock = spawn_session(z, &z->p.limits, &none, -1, true, &e);
	if (z->w.ahead_nice)
		(void)setpriority(PRIO_PROCESS, 0, 0);
	if (z->spare_sock >= 0)
		e->spare = true;
}

static void reap_session(struct zyg *z, size_t i)
{
	while (waitpid(z->sess[i].pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(z->sess[i].pidfd);
	if (z->sess[i].spare && z->spare_sock >= 0) {	/* the spare died: make another */
		close(z->spare_sock);
		z->spare_sock = -1;
	}
	z->sess[i] = z->sess[--z->n_sess];
}

/* A worker exited: reap it, tell the front what wait4 said, remove its scratch and cgroup. */
static void reap(struct zyg *z, size_t i)
{
	struct zw *w = &z->ws[i];
	struct ps_reaped m = { .magic = PS_REAPED_MAGIC };

	/* Its pidfd said it exited: the clock RLIMIT_CPU counted is readable until the reap. */
	m.cpu_clock_read = ps_proc_cpu_clock_us(w->proc.pid, &m.cpu_clock_us) == 0;
	while (wait4(w->proc.pid, &m.wait_status, 0, &m.ru) < 0 && errno == EINTR)
		;
	kill(-w->proc.pid, SIGKILL);	/* no survivor in its group */
	ps_worker_cleanup(&w->proc, &w->o);
	m.cgroup_used = w->o.cgroup_used;
	m.cgroup_memory_peak = w->o.cgroup_memory_peak;
	m.cgroup_oom_kills = w->o.cgroup_oom_kills;
	(void)ps_write_all(w->life, &m, sizeof(m));
	close(w->life);
	/* A spare that dies before any request claimed it is lost: the front could not take
	 * it (out of descriptors: recvmsg's MSG_CTRUNC closes what did not fit, so the worker
	 * read EOF), or something killed it. It must be replaced, else the pool shrinks for
	 * good; backing off, since whatever made the front drop it may still hold. */
	if (!w->claimed) {
		z->unclaimed--;
		z->unclaimed_r -= w->rehearsed;
		z->lost++;
		z->hold_until_us = ps_now_us() + (z->lost > 6 ? 1000000u : 15625u << (z->lost - 1));
	}
	z->ws[i] = z->ws[--z->n];
}

/* The front is gone: end every worker and the PID namespace's init, and reap them, so that
 * none is left for the host's init to reap (not every init does). */
static __attribute__((noreturn)) void zygote_exit(struct zyg *z, int status)
{
	for (size_t i = 0; i < z->n; i++)
		kill(-z->ws[i].proc.pid, SIGKILL);
	while (z->n)
		reap(z, z->n - 1);
	for (size_t i = 0; i < z->n_sess; i++)	/* each takes its session with it */
		kill(z->sess[i].pid, SIGKILL);
	while (z->n_sess)
		reap_session(z, z->n_sess - 1);
	ps_worker_release(&z->w);
	_exit(status);
}

static void claim(struct zyg *z, uint64_t serial)
{
	for (size_t i = 0; i < z->n; i++) {
		if (z->ws[i].serial != serial || z->ws[i].claimed)
			continue;
		z->ws[i].claimed = true;
		z->unclaimed--;
		z->unclaimed_r -= z->ws[i].rehearsed;
		z->lost = 0;
		/* Not yet reaped, so the pid is still this worker's. */
		if (z->w.ahead_nice)
			(void)setpriority(PRIO_PROCESS, (id_t)z->ws[i].proc.pid, 0);
	}
	/* Not found: it died before its CLAIM was read, and reap() counted it already. */
}

/* Every command the front has sent. false: the front is gone. */
static bool commands(struct zyg *z)
{
	for (;;) {
		struct ps_zcmd c;
		ssize_t n = recv(PS_ZYGOTE_CTL_FD, &c, sizeof(c), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		if (n != (ssize_t)sizeof(c) || c.magic != PS_ZCMD_MAGIC)
			continue;
		if (c.kind == PS_ZCMD_CLAIM)
			claim(z, c.serial);
		else if (c.kind == PS_ZCMD_FORK)
			(void)fork_worker(z, &c.limits, c.tag, false);
		else if (c.kind == PS_ZCMD_SESSION)
			fork_session(z, &c);
	}
}

static bool running(const struct zyg *z)
{
	for (size_t i = 0; i < z->n; i++)
		if (z->ws[i].claimed)
			return true;
	return false;
}

/* Single-threaded loop: keep the spares forked, run the front's commands, reap. It never
 * sees request data. */
static __attribute__((noreturn)) void zygote_loop(struct zyg *z)
{
	struct pollfd *p = NULL;
	size_t cap = 0;
	unsigned failures = 0;

	for (;;) {
		uint64_t now = ps_now_us();
		int timeout = -1;
		size_t polled;

		/* A fork (the page tables of the whole zygote) and a new worker's phases compete
		 * for the CPU with the runs: replace spares while nothing runs, or at once when
		 * none is left; the rehearsed ones (a figure drawn each) only while nothing runs. */
		for (;;) {
			unsigned plain = z->unclaimed - z->unclaimed_r;
			bool r = plain >= z->spare;

			if (r ? z->unclaimed_r >= z->rehearse || running(z)
			      : plain > 0 && running(z))
				break;
			if (now < z->hold_until_us)
				break;
			if (fork_worker(z, &z->p.limits, 0, r) < 0) {
				if (++failures > 100)
					_exit(PS_EXIT_INTERNAL);	/* the front restarts us */
				z->hold_until_us = now + 10000;
				break;
			}
			failures = 0;
			z->unclaimed++;
			z->unclaimed_r += r;
		}
		if (z->unclaimed < z->spare + z->rehearse && now < z->hold_until_us)
			timeout = (int)((z->hold_until_us - now + 999) / 1000);
		if (!running(z))
			keep_spare_session(z);
		if (z->sessions_wanted && z->spare_sock < 0 && now < z->spare_session_at_us) {
			int t = (int)((z->spare_session_at_us - now + 999) / 1000);

			timeout = timeout < 0 || t < timeout ? t : timeout;
		}
		if (cap < z->n + z->n_sess + 1) {
			cap = z->n + z->n_sess + 16;
			p = realloc(p, cap * sizeof(*p));
			if (!p)
				_exit(PS_EXIT_INTERNAL);
		}
		p[0] = (struct pollfd){ .fd = PS_ZYGOTE_CTL_FD, .events = POLLIN };
		for (size_t i = 0; i < z->n; i++)
			p[i + 1] = (struct pollfd){ .fd = z->ws[i].proc.f.pidfd, .events = POLLIN };
		for (size_t i = 0; i < z->n_sess; i++)
			p[z->n + 1 + i] = (struct pollfd){ .fd = z->sess[i].pidfd, .events = POLLIN };
		polled = z->n;
		if (poll(p, polled + z->n_sess + 1, timeout) < 0 && errno != EINTR)
			_exit(PS_EXIT_INTERNAL);
		/* Session hosts first, while their slots still match the poll's (a command may
		 * fork another) */
		for (size_t i = z->n_sess; i-- > 0;)
			if (p[polled + 1 + i].revents)
				reap_session(z, i);
		/* Commands next: a CLAIM is sent before the run's request is written, so a worker
		 * that has exited has had its CLAIM queued already; read it before reaping, so
		 * that a run that ended is not taken for a spare that was lost. */
		if (p[0].revents && !commands(z))
			zygote_exit(z, 0);
		/* (a FORK may have appended workers past the polled ones; a reap moves the last
		 * one down, into a slot already looked at) */
		for (size_t i = polled; i-- > 0;)
			if (p[i + 1].revents)
				reap(z, i);
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
	    ps_worker_prepare(&z->w, &z->p, layers_off, err, errlen) == 0 &&
	    ps_worker_share_scratch(&z->w, err, errlen) == 0) {
		if (z->w.shared_scratch[0])
			ps_interp_begin_shared(z->w.shared_scratch);
		if (!(z->w.layers_off & (1u << PS_LAYER_IDENTITY)))
			ps_identity_drop_bounding();
		ret = 0;
	}
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
	const char *spare = arg_value(argc, argv, "--spare");
	struct zyg z = { .spare_sock = -1 };
	char err[1024];
	int ret;

	if (!policy || !lo || !parent || !spare || fcntl(PS_ZYGOTE_CTL_FD, F_GETFD) < 0) {
		ps_err("zygote: internal command, started by `pysnip serve` only");
		return PS_EXIT_USAGE;
	}
	/* Die with the front; nothing of ours may outlive it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != (pid_t)atoi(parent))
		return PS_EXIT_INTERNAL;
	syscall(SYS_close_range, PS_ZYGOTE_CTL_FD + 1, ~0U, 0);
	z.spare = (unsigned)atoi(spare);
	if (z.spare < 1)
		z.spare = 1;
	if (zygote_setup(&z, policy, (uint32_t)strtoul(lo, NULL, 10), err, sizeof(err)) < 0) {
		(void)send(PS_ZYGOTE_CTL_FD, err, strlen(err), MSG_NOSIGNAL);
		return PS_EXIT_INTERNAL;
	}
	/* Every worker is a fork of us: the environment we were started with (the front keeps
	 * it minimal, pool.c) is overwritten on our stack once, now that setup has read what it
	 * needs (TMPDIR, the data directories). Our argv stays: it names the policy and the
	 * front, nothing a snippet may not know, and `ps` shows what we are. */
	if ((ret = ps_procstat_scrub_self(false)) < 0) {
		snprintf(err, sizeof(err), "zygote: scrubbing the environment (/proc/self/stat): %s",
			 strerror(-ret));
		(void)send(PS_ZYGOTE_CTL_FD, err, strlen(err), MSG_NOSIGNAL);
		return PS_EXIT_INTERNAL;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Signals to stop the server are the front's to act on (it drains, then ends us):
	 * systemd's KillMode=control-group sends SIGTERM to every process of the unit, and a
	 * zygote that died of it would take the runs in flight with it. Workers reset these. */
	sigaction(SIGINT, NULL, &py_sigint);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* Only root can give a worker its priority back (CAP_SYS_NICE in the first user ns). */
	if (geteuid() == 0 && !(z.w.ns_static & CLONE_NEWUSER))
		z.w.ahead_nice = 19;
	/* matplotlib's, numpy's and Pillow's snippets get spares that rehearsed a figure (the
	 * front hands them those: pool.c). Only where a spare's set-up can be background work
	 * (ahead_nice): a rehearsal is ~70 ms of CPU, which at nice 0 would take a CPU from the
	 * runs of a small machine. */
	if (z.w.ahead_nice)
		z.rehearse = ps_zygote_rehearsed_spares(&z.p, z.spare);
	if (send(PS_ZYGOTE_CTL_FD, "ok", 2, MSG_NOSIGNAL) < 0)
		return PS_EXIT_INTERNAL;
	zygote_loop(&z);
}
