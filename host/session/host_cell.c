/* One cell in the session host: the command to the holder, the cell's output streamed to the
 * front as it comes, its wall clock, CPU backstop, output cap and interrupt, the decision
 * (keep: the cell is the new holder; roll back: the cell is killed, the holder untouched),
 * and the verdict. See session_int.h for the protocol with the holder. */
#include "host_int.h"

#include <cjson/cJSON.h>
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

#include "run/result.h"
#include "util/util.h"

enum { REPORT_MAX = 8 << 20, CPU_POLL_MS = 100, CPU_GRACE_MS = 1000, QUERY_WALL_MS = 10000 };


static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static void kill_cell(struct cell *c)
{
	if (c->pidfd >= 0)
		pidfd_signal(c->pidfd, SIGKILL);
	c->killed = true;
}

static uint64_t proc_cpu_ms(pid_t pid)
{
	char path[64], *buf = NULL, *p;
	size_t len = 0;
	unsigned long long ut = 0, stime = 0;
	long tick = sysconf(_SC_CLK_TCK);

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (ps_read_file(path, &buf, &len) < 0)
		return 0;
	p = strrchr(buf, ')');	/* after the command name, which may hold spaces */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			&stime) != 2)
		ut = stime = 0;
	free(buf);
	return tick > 0 ? (ut + stime) * 1000 / (unsigned long long)tick : 0;
}

static void send_stream(struct cell *c, const char *name, const char *buf, size_t n)
{
	char *q = ps_json_quote_bytes(buf, n);
	size_t cap = (q ? strlen(q) : 0) + 64;
	char *line = q ? malloc(cap) : NULL;

	if (line) {
		snprintf(line, cap, "{\"event\":\"stream\",\"name\":\"%s\",\"text\":%s}", name, q);
		if (ps_host_send(c->h, line) < 0)
			c->front_gone = true;
	}
	free(line);
	free(q);
}

static void capture(struct ps_capture *cap, const char *data, size_t n)
{
	char *nb = realloc(cap->buf, cap->len + n + 1);

	if (!nb)
		return;
	cap->buf = nb;
	memcpy(cap->buf + cap->len, data, n);
	cap->len += n;
	cap->buf[cap->len] = '\0';
}

/* Output of the cell: captured for the verdict (under the cap) and streamed. false at EOF. */
static bool read_output(struct cell *c, int fd, bool is_err)
{
	struct ps_capture *cap = is_err ? &c->o.err : &c->o.out;
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	size_t keep;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	keep = (size_t)n;
	if (c->output_total + keep > c->r.limits.output_bytes) {
		keep = (size_t)(c->r.limits.output_bytes - c->output_total);
		cap->truncated = true;
		if (!c->o.output_capped) {
			c->o.output_capped = true;
			kill_cell(c);
		}
	}
	c->output_total += keep;
	if (keep) {
		capture(cap, buf, keep);
		send_stream(c, is_err ? "stderr" : "stdout", buf, keep);
	}
	return true;
}

/* Display frames on the report channel (interp_cell.c: TOKEN "D" 8 hex digits "\n" JSON):
 * each goes to the front as a display event as soon as it is whole. The final report
 * (TOKEN "\n") ends the scan. Anything else there was not written by pysnip: skipped. */
static void scan_displays(struct cell *c)
{
	const struct ps_capture *r = &c->o.report;
	size_t tl = strlen(c->h->token);

	while (c->scan_off + tl + 10 <= r->len) {
		const char *p = memmem(r->buf + c->scan_off, r->len - c->scan_off, c->h->token, tl);
		char hex[9], *end, *line;
		size_t n;

		if (!p || (size_t)(p - r->buf) + tl + 10 > r->len)
			return;
		if (p[tl] != 'D') {
			c->scan_off = p[tl] == '\n' ? r->len : (size_t)(p - r->buf) + tl;
			if (p[tl] == '\n')
				return;
			continue;
		}
		memcpy(hex, p + tl + 1, 8);
		hex[8] = '\0';
		n = strtoul(hex, &end, 16);
		if (*end || p[tl + 9] != '\n') {
			c->scan_off = (size_t)(p - r->buf) + tl;
			continue;
		}
		if ((size_t)(p - r->buf) + tl + 10 + n > r->len)
			return;	/* not whole yet */
		if (asprintf(&line, "{\"event\":\"display\",\"bundle\":%.*s}", (int)n,
			     p + tl + 10) >= 0) {
			if (ps_host_send(c->h, line) < 0)
				c->front_gone = true;
			free(line);
		}
		c->scan_off = (size_t)(p - r->buf) + tl + 10 + n;
	}
}

static bool read_report(struct cell *c, int fd)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (c->o.report.len + (size_t)n > REPORT_MAX) {
		c->o.report_capped = true;
		kill_cell(c);
		return true;
	}
	capture(&c->o.report, buf, (size_t)n);
	scan_displays(c);
	return true;
}

/* What is already in the pipes when the cell said it is done. */
static void drain(struct cell *c)
{
	const struct ps_worker_proc *hp = &c->h->hp;

	const int fds[] = { hp->f.out, hp->f.err, hp->f.report };

	for (size_t i = 0; i < PS_ARRAY_LEN(fds); i++) {
		for (;;) {
			struct pollfd p = { .fd = fds[i], .events = POLLIN };

			if (c->o.output_capped || poll(&p, 1, 0) <= 0)
				break;
			if (!(i == 2 ? read_report(c, fds[i]) : read_output(c, fds[i], i == 1)))
				break;
		}
	}
}

static void rusage_from(struct rusage *ru, const struct ps_status_rec *rec)
{
	memset(ru, 0, sizeof(*ru));
	ru->ru_utime.tv_sec = rec->utime_us / 1000000;
	ru->ru_utime.tv_usec = rec->utime_us % 1000000;
	ru->ru_stime.tv_sec = rec->stime_us / 1000000;
	ru->ru_stime.tv_usec = rec->stime_us % 1000000;
	ru->ru_maxrss = rec->maxrss_kb;
}

/* "threads_running" of the cell's report (pyshim cell_finish puts it last). */
static int threads_of(const struct ps_capture *r)
{
	static const char key[] = "\"threads_running\": ";
	const char *p = r->buf, *last = NULL;

	while (p && (p = memmem(p, r->len - (size_t)(p - r->buf), key, sizeof(key) - 1))) {
		last = p;
		p += sizeof(key) - 1;
	}
	return last ? atoi(last + sizeof(key) - 1) : 0;
}

/* The kept cell is the holder from now on: the next cell forked ahead, or first its threads
 * shed (a single-threaded copy of it takes its place: session_int.h). */
static void kill_for_teardown(struct host *h, int pidfd, pid_t pid, enum ps_prio prio)
{
	ps_host_renice(h, pidfd, pid, prio);
	if (pidfd >= 0)
		pidfd_signal(pidfd, SIGKILL);
}

static void kill_old_holder(struct cell *c)
{
	if (c->holder_dead)
		return;
	kill_for_teardown(c->h, c->h->holder_pidfd, c->h->holder, PS_PRIO_AHEAD);
}

/* A killed holder wakes to tear its address space down, and a process just woken where the
 * front's thread (woken by our verdict) also waits may be picked first: an idle-class task
 * that is eligible beats a normal one that is not yet, and keeps the CPU for its slice
 * (perf sched: the front's answer held 1-1.2 ms behind a teardown, in most of the slowest
 * cells). So the kill waits TEARDOWN_DELAY_US, by which the verdict has gone on its way;
 * anything the host is asked first (the next cell, the session's end) sends it at once. */
void ps_host_kill_dying(struct host *h)
{
	if (!h->dying_kill_at_us)
		return;
	h->dying_kill_at_us = 0;
	kill_for_teardown(h, h->dying_pidfd, h->dying, PS_PRIO_AHEAD);
}

static void take_over(struct cell *c)
{
	struct ps_scmd m = { .magic = PS_SCMD_MAGIC, .kind = PS_SCMD_SPARE };

	c->threads = threads_of(&c->o.report);
	c->shedding = c->threads > 0;
	c->shed_deadline_us = ps_now_us() + c->h->grace_ms * 1000;
	if (c->shedding)
		m.kind = PS_SCMD_SHED;
	if (c->widen_us) {	/* the holder's background work runs anywhere */
		c->widen_us = 0;
		ps_host_unpin(c->h, c->pid);
	}
	ps_host_renice(c->h, c->pidfd, c->pid, c->shedding ? PS_PRIO_FOREGROUND : PS_PRIO_AHEAD);
	(void)ps_write_all(c->h->hp.f.in, &m, sizeof(m));
}

/* The kept cell's single-threaded copy (FORKED, err 1): the cell from now on; the threaded
 * process is killed. err 2: it could not fork, the threads stay. */
static void shed_done(struct cell *c, const struct ps_status_rec *rec)
{
	struct ps_scmd m = { .magic = PS_SCMD_MAGIC, .kind = PS_SCMD_SPARE };
	struct ps_host_pid hp;
	int fd;

	c->shedding = false;
	if (rec->err != 1 || ps_host_find_child(c->pid_proc, rec->phase, &hp) < 0 ||
	    (fd = (int)syscall(SYS_pidfd_open, hp.ours, 0)) < 0) {
		c->shed_failed = true;
		(void)ps_write_all(c->h->hp.f.in, &m, sizeof(m));
		return;
	}
	pidfd_signal(c->pidfd, SIGKILL);
	close(c->pidfd);
	c->pidfd = fd;
	c->pid = hp.ours;
	c->pid_proc = hp.proc;
	c->cell_dead = false;
	ps_host_renice(c->h, c->pidfd, c->pid, PS_PRIO_AHEAD);
	(void)ps_write_all(c->h->hp.f.in, &m, sizeof(m));
}

/* The cell ended by itself: keep it unless its end is one a limit forced (out of memory). */
static void decide(struct cell *c, const struct ps_status_rec *rec)
{
	char st[32];

	drain(c);
	c->done = true;
	c->o.reaped = true;
	c->o.wait_status = (rec->err & 0xff) << 8;
	rusage_from(&c->o.ru, rec);
	c->o.wall_us = ps_now_us() - c->start_us;
	c->o.run_us = c->o.wall_us - c->o.setup_us;
	free(c->rendered);
	c->rendered = ps_verdict_render(&c->h->p, &c->r, &c->o, false);
	ps_host_status_of(c->rendered, st, sizeof(st));
	c->decided = true;
	c->keep = c->q->kind == PS_SCMD_EXEC && !c->killed &&
		  (!strcmp(st, "ok") || !strcmp(st, "exception") || !strcmp(st, "denied"));
	if (c->keep) {
		/* the old holder is blocked in wait4 and never runs again once the signal is
		 * sent: the cell is the holder from here on, without waiting for the teardown
		 * of the old one's address space; its teardown, and the new holder's fork of
		 * the next cell, are background. Where the cell left no thread to shed the
		 * kill waits until the verdict is out (ps_host_kill_dying): a killed process
		 * tears itself down on the CPU it wakes on, and that was often the host's. */
		c->take_over_after_verdict = threads_of(&c->o.report) == 0;
		if (!c->take_over_after_verdict)
			kill_old_holder(c);
		c->holder_dead = true;
		take_over(c);	/* the next cell's fork now; or the copy without the threads */
	} else {
		kill_cell(c);
	}
}

static void take_record(struct cell *c, const struct ps_status_rec *rec)
{
	struct host *h = c->h;
	struct ps_host_pid hp;

	if (rec->kind == PS_REC_SYSCALL) {	/* the SIGSYS handler: names a death */
		c->o.have_syscall = true;
		c->o.syscall_nr = rec->syscall_nr;
		c->o.syscall_arch = rec->arch;
		return;
	}
	if (strncmp(rec->msg, h->token, PS_SESSION_TOKEN_LEN))
		return;
	switch (rec->kind) {
	case PS_REC_CELL_FORKED:
		if (rec->err && c->shedding) {	/* the kept cell without its threads */
			shed_done(c, rec);
			break;
		}
		if (c->pid || c->done || c->reaped) {
			/* the next cell, forked ahead: by this cell once kept, or by the holder
			 * that reaped it */
			ps_host_note_spare(h, rec->phase, c->keep ? c->pid_proc : h->holder_proc);
			break;
		}
		c->o.setup_us = ps_now_us() - c->start_us;
		if (ps_host_find_child(h->holder_proc, rec->phase, &hp) == 0) {
			c->pid = hp.ours;
			c->pid_proc = hp.proc;
			c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
			ps_host_renice(h, c->pidfd, c->pid, PS_PRIO_FOREGROUND);
			if (ps_host_pin(h, c->pid))
				c->widen_us = ps_now_us() + PIN_US;
		}
		if (c->killed && c->pidfd >= 0)
			pidfd_signal(c->pidfd, SIGKILL);
		break;
	case PS_REC_CELL_DONE:
		if (!c->done && !c->reaped)
			decide(c, rec);
		break;
	case PS_REC_CELL_REAPED:
		if (rec->phase == 1 && !c->done && !c->killed && !c->respared) {
			/* the spare we took for the cell died before it read the command (killed
			 * from inside the session): the holder's next spare reads it. Once: a
			 * second such death, or one after we killed the cell, is the cell's */
			c->respared = true;
			if (c->pidfd >= 0)
				close(c->pidfd);
			c->pidfd = -1;
			c->pid = c->pid_proc = 0;
			c->cell_dead = false;
			break;
		}
		c->reaped = true;
		if (!c->done && rec->phase < 0) {	/* no cell: fork failed */
			snprintf(c->o.host_error, sizeof(c->o.host_error),
				 "the holder could not fork the cell: fork(): %s", strerror(rec->err));
		} else if (!c->done) {
			c->o.reaped = rec->err >= 0;
			c->o.wait_status = rec->err;
			rusage_from(&c->o.ru, rec);
		}
		break;
	case PS_REC_INPUT: {
		cJSON *m = cJSON_CreateObject();
		char *line;

		cJSON_AddStringToObject(m, "event", "input_request");
		cJSON_AddStringToObject(m, "prompt", rec->msg + PS_SESSION_TOKEN_LEN);
		cJSON_AddBoolToObject(m, "password", rec->phase == 1);
		line = cJSON_PrintUnformatted(m);
		cJSON_Delete(m);
		c->input_pending = true;
		if (!line || ps_host_send(h, line) < 0)
			c->front_gone = true;
		free(line);
		break;
	}
	}
}

static void read_status(struct cell *c)
{
	struct ps_status_rec rec;
	ssize_t n = read(c->h->hp.f.status, &rec, sizeof(rec));

	if (n == (ssize_t)sizeof(rec))
		take_record(c, &rec);
}

/* An input() answer, to the cell that asked. */
static void send_input(struct cell *c, const cJSON *m)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "value");
	struct ps_scmd q = { .magic = PS_SCMD_MAGIC, .kind = PS_SCMD_INPUT };
	size_t n = cJSON_IsString(v) ? strlen(v->valuestring) : 0;

	if (!c->input_pending)
		return;
	c->input_pending = false;
	q.len = cJSON_IsString(v) ? n : PS_SCMD_REFUSED;
	if (ps_write_all(c->h->hp.f.in, &q, sizeof(q)) == 0 && n)
		(void)ps_write_all(c->h->hp.f.in, v->valuestring, n);
}

/* Lines from the front while the cell runs: interrupt and input only. */
static void front_lines(struct cell *c)
{
	char *line;
	bool eof = false;

	while ((line = ps_host_next_line(c->h, &eof))) {
		cJSON *m = cJSON_Parse(line);
		const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
		const char *o = cJSON_IsString(op) ? op->valuestring : "";

		if (!strcmp(o, "interrupt")) {
			if (!c->interrupted && c->pidfd >= 0) {
				pidfd_signal(c->pidfd, SIGINT);
				c->interrupted = true;
				c->int_deadline_us = ps_now_us() + c->h->grace_ms * 1000;
			}
		} else if (!strcmp(o, "input")) {
			send_input(c, m);
		} else if (ps_host_send(c->h, "{\"event\":\"error\",\"message\":\"busy: a cell is "
					      "running (only interrupt and input now)\"}") < 0) {
			c->front_gone = true;
		}
		cJSON_Delete(m);
		free(line);
	}
	if (eof)
		c->front_gone = true;
}

static void on_timer(struct cell *c, uint64_t now)
{
	if (now >= c->deadline_us && !c->done && !c->o.timed_out) {
		c->o.timed_out = true;
		if (c->pidfd >= 0)
			kill_cell(c);
		else	/* no cell to name: the holder never said it forked one */
			pidfd_signal(c->h->holder_pidfd, SIGKILL);
	}
	if (c->shedding && !c->killed && now >= c->shed_deadline_us)
		kill_cell(c);	/* its copy never came: the state is lost (run_cell says so) */
	if (c->interrupted && !c->int_killed && !c->done && now >= c->int_deadline_us) {
		c->int_killed = true;
		kill_cell(c);
	}
	if (c->widen_us && now >= c->widen_us) {
		c->widen_us = 0;
		if (!c->done && !c->cell_dead)
			ps_host_unpin(c->h, c->pid);
	}
	if (c->pid > 0 && !c->done && c->r.limits.cpu_ms && now >= c->cpu_check_us) {
		c->cpu_check_us = now + CPU_POLL_MS * 1000;
		/* RLIMIT_CPU's SIGXCPU is the cell's limit; this is the backstop for a cell that
		 * ignores SIGXCPU */
		if (proc_cpu_ms(c->pid_proc) > c->r.limits.cpu_ms + CPU_GRACE_MS) {
			c->cpu_killed = true;
			kill_cell(c);
		}
	}
}

static bool finished(const struct cell *c)
{
	if (c->front_gone)
		return true;
	if (c->keep)	/* the threaded process dead by itself: nothing will come */
		return c->holder_dead && (!c->shedding || c->cell_dead);
	if (c->reaped)
		return true;
	/* the holder is gone and cannot reap: nothing more will come */
	return c->holder_dead && (c->cell_dead || c->pidfd < 0);
}

/* Until the holder has forked the cell, without a PID namespace, zombies of the session
 * (holders a kept cell replaced, whose teardown was not waited for) are reaped every few
 * ms: RLIMIT_NPROC counts them, and the holder's fork is waiting for room. */
enum { ORPHAN_REAP_MS = 5 };

static bool reaps_while_forking(const struct cell *c)
{
	return c->pid <= 0 && !(c->h->w.ns_static & CLONE_NEWPID);
}

static int next_timeout(const struct cell *c)
{
	uint64_t now = ps_now_us(), t = c->deadline_us;

	if (reaps_while_forking(c) && now + ORPHAN_REAP_MS * 1000 < t)
		t = now + ORPHAN_REAP_MS * 1000;

	if (c->interrupted && c->int_deadline_us < t)
		t = c->int_deadline_us;
	if (c->pid > 0 && c->r.limits.cpu_ms && c->cpu_check_us < t)
		t = c->cpu_check_us;
	if (c->widen_us && c->widen_us < t)
		t = c->widen_us;
	if (c->done || c->killed)
		return 50;
	return t <= now ? 0 : (int)((t - now + 999) / 1000);
}

static void supervise(struct cell *c)
{
	struct host *h = c->h;

	while (!finished(c)) {
		struct pollfd p[] = {
			{ .fd = FRONT_FD, .events = POLLIN },
			{ .fd = h->hp.f.out, .events = POLLIN },
			{ .fd = h->hp.f.err, .events = POLLIN },
			{ .fd = h->hp.f.status, .events = POLLIN },
			{ .fd = h->hp.f.report, .events = POLLIN },
			{ .fd = c->cell_dead ? -1 : c->pidfd, .events = POLLIN },
			{ .fd = c->holder_dead ? -1 : h->holder_pidfd, .events = POLLIN },
		};
		int n = poll(p, PS_ARRAY_LEN(p), next_timeout(c));

		if (n < 0 && errno != EINTR)
			break;
		on_timer(c, ps_now_us());
		if (reaps_while_forking(c))
			ps_host_reap_others(h->hp.pid);
		if (n <= 0)
			continue;
		/* display frames, then output (a frame is written only once the output before
		 * it was read: interp_cell.c), then the records that end the cell */
		if (p[4].revents)
			read_report(c, p[4].fd);
		if (p[1].revents)
			read_output(c, p[1].fd, false);
		if (p[2].revents)
			read_output(c, p[2].fd, true);
		if (p[3].revents)
			read_status(c);
		if (p[0].revents)
			front_lines(c);
		if (p[5].revents)
			c->cell_dead = true;
		if (p[6].revents)
			c->holder_dead = true;
	}
	if (!c->done)
		c->o.wall_us = ps_now_us() - c->start_us;
	if (!c->o.run_us && c->o.wall_us > c->o.setup_us)
		c->o.run_us = c->o.wall_us - c->o.setup_us;
}

/* Orphans of the session are ours to reap only without a PID namespace (its init reaps
 * them otherwise): then /proc says which of our children have ended. */
static void reap_orphans(struct host *h)
{
	if (!(h->w.ns_static & CLONE_NEWPID))
		ps_host_reap_others(h->hp.pid);
}

/* The holder a kept cell replaced was killed without waiting for its teardown, and the next
 * cell does not wait for it either (it would be most of a cell's latency): RLIMIT_NPROC has
 * room for it (holder_limits), and the holder retries a fork refused meanwhile. */
static void forget_dying(struct host *h)
{
	if (h->dying_pidfd < 0)
		return;
	close(h->dying_pidfd);
	h->dying_pidfd = -1;
	reap_orphans(h);
}

static int send_command(struct cell *c)
{
	struct ps_scmd q = { .magic = PS_SCMD_MAGIC, .kind = (uint32_t)c->q->kind,
			     .len = c->q->len, .count = c->h->count,
			     .cpu_ms = c->r.limits.cpu_ms, .cursor = c->q->cursor };

	if (c->q->query)
		snprintf(q.query, sizeof(q.query), "%s", c->q->query);
	forget_dying(c->h);
	if (ps_write_all(c->h->hp.f.in, &q, sizeof(q)) < 0 ||
	    ps_write_all(c->h->hp.f.in, c->q->code, c->q->len) < 0) {
		c->holder_dead = true;
		return -1;
	}
	return 0;
}

/* After the cell: the holder is the cell if kept; reap whatever of ours has ended. */
static void settle(struct cell *c)
{
	struct host *h = c->h;

	if (c->keep) {
		if (h->dying_pidfd >= 0)
			close(h->dying_pidfd);
		h->dying_pidfd = h->holder_pidfd;	/* awaited before the next fork */
		h->dying = h->holder;
		h->holder = c->pid;
		h->holder_proc = c->pid_proc;
		h->holder_pidfd = c->pidfd;
		c->pidfd = -1;
		h->lost[0] = '\0';
	} else if (c->holder_dead) {
		snprintf(h->lost, sizeof(h->lost), "the holder died (from inside the session?) "
			 "after cell %llu: this cell ran on a fresh state",
			 (unsigned long long)h->count);
		h->holder_up = false;
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	reap_orphans(h);
}

int ps_host_run_cell(struct host *h, const struct ps_cell_req *q)
{
	struct cell c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.h = h;
	c.q = q;
	c.pidfd = -1;
	c.r.code = q->code;
	c.r.code_len = q->len;
	c.r.limits = q->kind == PS_SCMD_EXEC ? q->limits : h->cell;
	if (q->kind == PS_SCMD_QUERY && (!c.r.limits.wall_ms || c.r.limits.wall_ms > QUERY_WALL_MS))
		c.r.limits.wall_ms = QUERY_WALL_MS;
	if (q->kind == PS_SCMD_EXEC)
		h->count++;
	memcpy(c.o.report_token, h->token, sizeof(c.o.report_token));
	c.o.have_held = true;
	c.o.held = h->held;
	c.start_us = ps_now_us();
	c.deadline_us = c.start_us + c.r.limits.wall_ms * 1000;
	c.cpu_check_us = c.start_us + CPU_POLL_MS * 1000;
	/* the replaced holder's kill, if still deferred, is due now; a teardown still going
	 * holds a slot the next fork may need, and goes on at PS_PRIO_TEARDOWN (host.c) */
	if (h->dying_kill_at_us) {
		h->dying_kill_at_us = 0;
		kill_for_teardown(h, h->dying_pidfd, h->dying, PS_PRIO_TEARDOWN);
	} else {
		ps_host_renice(h, h->dying_pidfd, h->dying, PS_PRIO_TEARDOWN);
	}
	/* the cell is the spare the holder forked ahead, when it said so already */
	ps_host_read_idle_records(h);
	struct ps_host_pid sp;

	if (ps_host_take_spare(h, &sp, &c.pidfd) == 0) {
		c.pid = sp.ours;
		c.pid_proc = sp.proc;
		ps_host_renice(h, c.pidfd, c.pid, PS_PRIO_FOREGROUND);	/* the cell */
		if (ps_host_pin(h, c.pid))
			c.widen_us = c.start_us + PIN_US;
	} else {	/* the holder has yet to fork it: at full speed */
		ps_host_renice(h, h->holder_pidfd, h->holder, PS_PRIO_FOREGROUND);
	}
	if (send_command(&c) == 0)
		supervise(&c);
	if (c.front_gone) {
		free(c.rendered);
		kill_cell(&c);
		ps_outcome_free(&c.o);
		if (c.pidfd >= 0)
			close(c.pidfd);
		return -1;
	}
	if (c.keep && c.shedding)	/* the threaded process died before its copy was made */
		snprintf(h->lost, sizeof(h->lost), "the cell's process died while its threads were "
			 "being stopped: the next cell starts afresh");
	if (!c.done && !c.reaped && !c.o.host_error[0])
		snprintf(c.o.host_error, sizeof(c.o.host_error),
			 "the session's holder died before the cell ended");
	if (q->kind == PS_SCMD_EXEC) {
		h->cells++;
		h->cpu_us += (uint64_t)(c.o.ru.ru_utime.tv_sec + c.o.ru.ru_stime.tv_sec) * 1000000 +
			     (uint64_t)(c.o.ru.ru_utime.tv_usec + c.o.ru.ru_stime.tv_usec);
	}
	ret = q->kind == PS_SCMD_EXEC ? ps_host_send_verdict(&c) : ps_host_send_query(&c);
	free(c.rendered);
	settle(&c);
	if (c.keep && c.take_over_after_verdict)	/* the old holder, now h->dying */
		h->dying_kill_at_us = ps_now_us() + TEARDOWN_DELAY_US;
	ps_outcome_free(&c.o);
	return ret;
}
