/* The parent's side of a run: feed stdin, collect output under a cap, read the status and
 * report channels, enforce the wall clock, reap, and make sure nothing survives. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procstat.h"
#include "util/util.h"
#include "worker.h"

enum { REPORT_MAX = 4 << 20, REAPED_WAIT_MS = 10000 };
/* Between a worker's exit record and its exit: how often /proc is looked at again. */
enum { EXIT_RECHECK_FIRST_US = 20, EXIT_RECHECK_MAX_US = 5000 };

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1UL << 2)
#endif

struct sv {
	pid_t pid;
	int pidfd;
	bool remote;		/* a zygote's child: signalled through its pidfd */
	const struct ps_supervise_fds *f;
	const struct ps_run *r;
	struct ps_outcome *o;
	uint64_t start_us;
	size_t in_off;
	uint64_t output_total;
	bool killed;
	bool exit_said;		/* a valid PS_REC_EXIT came */
	struct ps_status_rec exit_rec;
	uint64_t recheck_us;	/* the next wait before looking at /proc again */
	uint64_t widen_us;	/* f->pinned gets every CPU then (0: done, or never pinned) */
};

/* The worker leads its own process group (setpgid in phase_lifecycle). A zygote's worker
 * lives in a PID namespace we cannot name pids in: its pidfd names the group. */
static void kill_group(struct sv *s)
{
	if (!s->remote) {
		kill(-s->pid, SIGKILL);
		return;
	}
	if (s->pidfd >= 0 &&
	    syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, PIDFD_SIGNAL_PROCESS_GROUP) < 0)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
}

volatile sig_atomic_t ps_interrupted;

static void on_interrupt(int sig)
{
	ps_interrupted = sig;
}

void ps_supervise_catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_interrupt };	/* no SA_RESTART: poll returns */

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < PS_ARRAY_LEN(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* A run pinned to the front's CPU for its start (pool.c) gets every CPU from widen_us on:
 * each thread it has by then, as /proc lists them (a thread started meanwhile inherited the
 * pin). */
static void widen(const struct ps_supervise_fds *f)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)f->pinned);
	dir = opendir(path);
	if (!dir) {
		(void)sched_setaffinity(f->pinned, sizeof(*f->cpus), f->cpus);
		return;
	}
	while ((d = readdir(dir)))
		if (d->d_name[0] >= '1' && d->d_name[0] <= '9')
			(void)sched_setaffinity((pid_t)atoi(d->d_name), sizeof(*f->cpus), f->cpus);
	closedir(dir);
}

static void kill_all(struct sv *s)
{
	kill_group(s);
	if (!s->remote)
		kill(s->pid, SIGKILL);
	s->killed = true;
}

static int cap_append(struct ps_capture *c, const char *data, size_t n)
{
	char *nb = realloc(c->buf, c->len + n + 1);

	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	memcpy(c->buf + c->len, data, n);
	c->len += n;
	c->buf[c->len] = '\0';
	return 0;
}

/* Read what is there; returns false at EOF or error (the fd is then done). */
static bool read_output(struct sv *s, int fd, struct ps_capture *c)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	uint64_t cap = s->r->limits.output_bytes;
	size_t keep = (size_t)n;

	if (s->output_total + keep > cap) {
		keep = (size_t)(cap - s->output_total);
		c->truncated = true;
		if (!s->o->output_capped) {
			s->o->output_capped = true;
			kill_all(s);
		}
	}
	s->output_total += keep;
	if (keep)
		cap_append(c, buf, keep);
	return true;
}

static bool read_report(struct sv *s, int fd)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	/* the report carries the run's output files and display bundles, base64 (4/3) */
	if (s->o->report.len + (size_t)n > REPORT_MAX + (s->r->limits.output_files_bytes +
							    s->r->limits.output_bytes) / 3 * 4) {
		s->o->report_capped = true;
		kill_all(s);
		return false;
	}
	cap_append(&s->o->report, buf, (size_t)n);
	return true;
}

static void take_record(struct sv *s, const struct ps_status_rec *rec)
{
	struct ps_outcome *o = s->o;

	/* A zygote's worker ending normally (worker.c, child_report_exit): it counts only behind
	 * the run's token, which the snippet never sees, and only if we have not killed it. */
	if (o->have_held && rec->kind == PS_REC_EXIT && s->f->early_exit && s->f->procstat >= 0 &&
	    o->held.seccomp && !s->killed && !s->exit_said && o->report_token[0] &&
	    !strncmp(rec->msg, o->report_token, sizeof(rec->msg))) {
		s->exit_said = true;
		s->exit_rec = *rec;
		s->recheck_us = EXIT_RECHECK_FIRST_US;
		if (!o->run_us)
			o->run_us = ps_now_us() - s->start_us - o->setup_us;
		return;
	}
	/* Once the snippet runs it can write to this pipe too: from then on only the SIGSYS
	 * handler's record counts, and only as the name of a death the kernel confirms
	 * (result.c requires SIGSYS). The last one wins: the handler's comes last. */
	if (o->have_held && rec->kind != PS_REC_SYSCALL)
		return;
	switch (rec->kind) {
	case PS_REC_HELD:
		o->setup_us = ps_now_us() - s->start_us;
		o->have_held = true;
		o->held = rec->held;
		o->ahead_cpu_us[0] = rec->utime_us > 0 ? rec->utime_us : 0;
		o->ahead_cpu_us[1] = rec->stime_us > 0 ? rec->stime_us : 0;
		memcpy(o->scratch, rec->msg, sizeof(o->scratch));
		o->scratch[sizeof(o->scratch) - 1] = '\0';
		break;
	case PS_REC_PHASE_FAIL:
		o->phase_failed = true;
		o->held = rec->held;
		o->phase_err = rec->err;
		snprintf(o->phase_name, sizeof(o->phase_name), "%s", ps_worker_phase_name(rec->phase));
		memcpy(o->phase_msg, rec->msg, sizeof(o->phase_msg));
		o->phase_msg[sizeof(o->phase_msg) - 1] = '\0';
		break;
	case PS_REC_SYSCALL:
		o->have_syscall = true;
		o->syscall_nr = rec->syscall_nr;
		o->syscall_arch = rec->arch;
		break;
	}
}

static void take_off(struct timeval *tv, int64_t us)
{
	int64_t t = (int64_t)tv->tv_sec * 1000000 + tv->tv_usec - us;

	if (t < 0)
		t = 0;
	tv->tv_sec = (time_t)(t / 1000000);
	tv->tv_usec = (suseconds_t)(t % 1000000);
}

static bool read_status(struct sv *s, int fd)
{
	struct ps_status_rec rec;
	ssize_t n = read(fd, &rec, sizeof(rec));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	/* One packet (worker_spawn.c: O_DIRECT): a record is one whole write; anything else is
	 * the snippet's, skipped without ending the channel. */
	if (n == (ssize_t)sizeof(rec))
		take_record(s, &rec);
	return true;
}

/* The worker said it is exiting: is it? 1 when /proc shows it in its own exit (nothing of it
 * can run again, so the record's exit is the one the kernel will report); 0 not yet (look
 * again, or wait for the pidfd); -1 never: it is dying of a signal, or cannot be looked at.
 * Only the snippet could have written the record then (it holds the token), and the kernel's
 * word decides. */
static int exit_confirmed(struct sv *s)
{
	struct ps_procstat st;
	int ret = ps_procstat_read(s->f->procstat, &st);

	if (ret == -ESRCH)
		return 0;	/* reaped already: the pidfd says so next */
	if (ret < 0 || ps_procstat_signaled(&st))
		return -1;
	if (!ps_procstat_exiting_by_itself(&st))
		return 0;
	if (s->f->threads && !ps_procstat_exiting_alone(&st, (s->exit_rec.err & 0xff) << 8))
		return -1;	/* a zombie leader, or another status: wait4's word */
	return 1;
}

static bool write_stdin(struct sv *s, int fd)
{
	const struct ps_supervise_fds *f = s->f;
	ssize_t n = write(fd, f->feed + s->in_off, f->feed_len - s->in_off);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;	/* EPIPE: the snippet stopped reading; that is its business */
	s->in_off += (size_t)n;
	return s->in_off < f->feed_len;
}

/* A zygote's worker: the zygote reaps it and sends what wait4 said. */
static bool read_reaped(int fd, struct ps_outcome *o)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct ps_reaped m;
	ssize_t n = -1;

	if (poll(&p, 1, REAPED_WAIT_MS) > 0)
		do
			n = read(fd, &m, sizeof(m));
		while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(m) || m.magic != PS_REAPED_MAGIC) {
		snprintf(o->host_error, sizeof(o->host_error),
			 "the zygote ended before it reaped the worker (zygote killed or crashed)");
		return false;
	}
	o->wait_status = m.wait_status;
	o->ru = m.ru;
	o->cpu_clock_read = m.cpu_clock_read;
	o->cpu_clock_us = m.cpu_clock_us;
	if (m.cgroup_used) {
		o->cgroup_used = true;
		o->held.cgroup = 1;
		o->cgroup_memory_peak = m.cgroup_memory_peak;
		o->cgroup_oom_kills = m.cgroup_oom_kills;
	}
	return true;
}

enum { FD_OUT, FD_ERR, FD_STATUS, FD_REPORT, FD_IN, FD_PID, FD_COUNT };

static int poll_us(struct pollfd *p, nfds_t n, uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000 };

	return ppoll(p, n, &ts, NULL);
}

/* How long to wait in poll: to the deadline; while a worker that said it is exiting is not
 * seen exiting yet, a short and growing interval (it is usually a few microseconds away from
 * exit_group; a forged record must not make us spin until the deadline). */
static uint64_t wait_us(struct sv *s, uint64_t deadline, bool exited, bool recheck)
{
	uint64_t now = ps_now_us(), t;

	if (exited)
		return 0;
	t = s->killed ? 50000 : now >= deadline ? 0 : deadline - now;
	if (s->widen_us) {
		uint64_t w = s->widen_us > now ? s->widen_us - now : 0;

		t = w < t ? w : t;
	}
	if (recheck && t > s->recheck_us) {
		t = s->recheck_us;
		s->recheck_us = s->recheck_us * 2 > EXIT_RECHECK_MAX_US ? EXIT_RECHECK_MAX_US
									: s->recheck_us * 2;
	}
	return t;
}

void ps_supervise(pid_t pid, const struct ps_supervise_fds *f, const struct ps_run *r,
		  uint64_t start_us, struct ps_outcome *o)
{
	struct sv s = { .pid = pid, .pidfd = f->pidfd, .remote = f->life >= 0, .f = f, .r = r,
			.o = o, .start_us = start_us,
			.widen_us = f->pinned > 0 && f->cpus ? f->widen_us : 0 };
	struct pollfd p[FD_COUNT];
	uint64_t deadline = start_us + r->limits.wall_ms * 1000;
	bool exited = false;
	int open_fds;

	p[FD_OUT] = (struct pollfd){ .fd = f->out, .events = POLLIN };
	p[FD_ERR] = (struct pollfd){ .fd = f->err, .events = POLLIN };
	p[FD_STATUS] = (struct pollfd){ .fd = f->status, .events = POLLIN };
	p[FD_REPORT] = (struct pollfd){ .fd = f->report, .events = POLLIN };
	p[FD_IN] = (struct pollfd){ .fd = f->feed_len ? f->in : -1, .events = POLLOUT };
	p[FD_PID] = (struct pollfd){ .fd = f->pidfd, .events = POLLIN };
	if (!f->feed_len && f->in >= 0)
		close(f->in);
	else if (f->in >= 0)
		fcntl(f->in, F_SETFL, O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);

	for (;;) {
		if (ps_interrupted && !s.killed) {
			/* the caller was told to stop: end the run, still report and clean up */
			const char *abbrev = sigabbrev_np((int)ps_interrupted);

			snprintf(o->host_error, sizeof(o->host_error), "interrupted by SIG%s",
				 abbrev ? abbrev : "?");
			kill_all(&s);
		}
		bool recheck = false;

		/* After its exit record the status channel stays open (the seccomp handler's
		 * record may still come, should the exit not be confirmed) but is not waited for. */
		open_fds = 0;
		for (int i = FD_OUT; i <= FD_REPORT; i++)
			open_fds += p[i].fd >= 0 && !(i == FD_STATUS && s.exit_said);
		/* Done when the worker is gone and its channels drained; or when every channel
		 * closed and there is no pidfd to watch; or when it said it is exiting and the
		 * kernel shows it is. */
		if (open_fds == 0) {
			if (exited || p[FD_PID].fd < 0)
				break;
			if (s.exit_said) {
				int c = exit_confirmed(&s);

				if (c > 0)
					break;
				if (c == 0 && f->idle_exit_pid > 0 &&
				    s.recheck_us == 2 * EXIT_RECHECK_FIRST_US)
					(void)sched_setscheduler(f->idle_exit_pid, SCHED_OTHER,
								 &(struct sched_param){ 0 });
				if (c < 0)
					s.exit_said = false;	/* wait for the kernel's word */
				recheck = s.exit_said;
			}
		}
		int n = poll_us(p, FD_COUNT, wait_us(&s, deadline, exited, recheck));

		if (s.widen_us && ps_now_us() >= s.widen_us) {
			s.widen_us = 0;
			if (!exited)
				widen(f);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* EINVAL (more descriptors than RLIMIT_NOFILE allows us), ENOMEM: the revents
			 * would be stale and the loop would spin; end the run, the kernel's word on
			 * the worker still decides below */
			snprintf(o->host_error, sizeof(o->host_error),
				 "poll() on the worker's channels: %s", strerror(errno));
			kill_all(&s);
			break;
		}
		if (n == 0) {
			if (exited) {
				/* Worker gone, channels still held open by a survivor: drop them. */
				kill_all(&s);
				break;
			}
			if (!s.killed && ps_now_us() >= deadline) {
				o->timed_out = true;
				kill_all(&s);
			}
			continue;
		}
		if (p[FD_PID].fd >= 0 && (p[FD_PID].revents & POLLIN)) {
			exited = true;
			if (o->have_held)
				o->run_us = ps_now_us() - start_us - o->setup_us;
			kill_group(&s);	/* no survivor in the worker's group */
			p[FD_PID].fd = -1;
		}
		for (int i = FD_OUT; i <= FD_IN; i++) {
			bool more;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if (i == FD_OUT)
				more = read_output(&s, p[i].fd, &o->out);
			else if (i == FD_ERR)
				more = read_output(&s, p[i].fd, &o->err);
			else if (i == FD_STATUS)
				more = read_status(&s, p[i].fd);
			else if (i == FD_REPORT)
				more = read_report(&s, p[i].fd);
			else
				more = write_stdin(&s, p[i].fd);
			if (!more) {
				close(p[i].fd);
				p[i].fd = -1;
			}
		}
	}
	for (int i = FD_OUT; i <= FD_IN; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	if (s.exit_said && !exited) {
		/* ending as it said, its channels closed: what it will exit with is known (a
		 * survivor in its group, were there one, goes below) */
		o->wait_status = (s.exit_rec.err & 0xff) << 8;
		o->ru.ru_utime.tv_sec = s.exit_rec.utime_us / 1000000;
		o->ru.ru_utime.tv_usec = s.exit_rec.utime_us % 1000000;
		o->ru.ru_stime.tv_sec = s.exit_rec.stime_us / 1000000;
		o->ru.ru_stime.tv_usec = s.exit_rec.stime_us % 1000000;
		o->ru.ru_maxrss = s.exit_rec.maxrss_kb;
		o->reaped = true;
		o->self_exit = true;
	} else if (s.remote) {
		o->reaped = read_reaped(f->life, o);
	} else {
		siginfo_t si;

		/* Exited but not reaped yet: the clock RLIMIT_CPU counted can still be read. */
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
			;
		o->cpu_clock_read = ps_proc_cpu_clock_us(pid, &o->cpu_clock_us) == 0;
		while (wait4(pid, &o->wait_status, 0, &o->ru) < 0) {
			if (errno != EINTR)
				break;
		}
		o->reaped = true;
	}
	o->wall_us = ps_now_us() - start_us;
	/* A spare's CPU before its request (its phases; a rehearsal) was not the run's. The
	 * kernel's RLIMIT_CPU counted it (result.c decides a CPU-limit kill on that clock). */
	take_off(&o->ru.ru_utime, o->ahead_cpu_us[0]);
	take_off(&o->ru.ru_stime, o->ahead_cpu_us[1]);
	kill_group(&s);
}
