/* The session holder: a worker that, after every phase of its policy, keeps a notebook's
 * state and forks one child per cell (the protocol is in session_int.h). It runs inside the
 * sandbox; the cell it forks is where untrusted code runs, and a cell that is kept becomes
 * the holder in its turn, so nothing here trusts more than its own session. */
#include "session_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "python/interp.h"
#include "sandbox/sandbox.h"
#include "util/util.h"

enum { CMD_FD = 0, STATUS_FD = 3, REPORT_FD = 4 };

struct sigaction ps_session_py_sigint;

static const char *session_token;

static void send_rec(uint32_t kind, int32_t phase, int32_t err, const char *text,
		     const struct rusage *ru)
{
	struct ps_status_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = kind;
	rec.phase = phase;
	rec.err = err;
	if (ru) {
		rec.utime_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
		rec.stime_us = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
		rec.maxrss_kb = ru->ru_maxrss;
	}
	snprintf(rec.msg, sizeof(rec.msg), "%s%s", session_token, text ? text : "");
	(void)ps_write_all(STATUS_FD, &rec, sizeof(rec));
}

/* len bytes from fd 0 into a malloc'd, NUL-terminated buffer (NULL on EOF or no memory;
 * then the bytes are still consumed, so the channel stays in step). */
static char *read_body(uint64_t len)
{
	char *buf = len < (1ull << 40) ? malloc((size_t)len + 1) : NULL;
	char sink[4096];

	if (buf) {
		if (ps_read_exact(CMD_FD, buf, (size_t)len) < 0) {
			free(buf);
			return NULL;
		}
		buf[len] = '\0';
		return buf;
	}
	while (len > 0) {
		size_t n = len < sizeof(sink) ? (size_t)len : sizeof(sink);

		if (ps_read_exact(CMD_FD, sink, n) < 0)
			break;
		len -= n;
	}
	return NULL;
}

/* input() in a cell: ask the host (which asks the front), wait for the line. */
static char *input_line(const char *prompt, bool password)
{
	struct ps_scmd q;

	send_rec(PS_REC_INPUT, password, 0, prompt, NULL);
	for (;;) {
		if (ps_read_exact(CMD_FD, &q, sizeof(q)) < 0 || q.magic != PS_SCMD_MAGIC)
			return NULL;
		if (q.kind == PS_SCMD_INPUT)
			return q.len == PS_SCMD_REFUSED ? NULL : read_body(q.len);
		free(read_body(q.len));	/* nothing else is sent while a cell runs */
	}
}

static int64_t cpu_us_of(const struct rusage *ru)
{
	return (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
	       ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

/* The cell, in the child: its CPU as a soft limit (SIGXCPU; the hard limit stays the
 * holder's, so that a kept cell can hold on), run, report, and carry on as the holder.
 * before: the child's usage when the command came (a spare waited for it): not the cell's. */
static void cell_child(const struct ps_scmd *q, const char *code, const struct rusage *before)
{
	struct rlimit cpu, was;
	struct rusage ru;
	pid_t self = getpid();
	int rc;

	getrlimit(RLIMIT_CPU, &was);
	if (q->kind == PS_SCMD_EXEC && q->cpu_ms) {
		/* RLIMIT_CPU counts from the fork: the spare's wait is added to the cell's */
		uint64_t ms = q->cpu_ms + (uint64_t)cpu_us_of(before) / 1000;

		cpu.rlim_cur = (rlim_t)((ms + 999) / 1000);
		cpu.rlim_max = was.rlim_max;
		if (was.rlim_max != RLIM_INFINITY && cpu.rlim_cur > was.rlim_max)
			cpu.rlim_cur = was.rlim_max;
		setrlimit(RLIMIT_CPU, &cpu);
	}
	if (q->kind == PS_SCMD_EXEC) {
		rc = ps_interp_cell_run(code, (size_t)q->len, (unsigned long)q->count, REPORT_FD);
	} else {
		char kind[sizeof(q->query) + 1];

		memcpy(kind, q->query, sizeof(q->query));
		kind[sizeof(q->query)] = '\0';
		rc = ps_interp_cell_query(kind, code, (size_t)q->len, (size_t)q->cursor, REPORT_FD);
	}
	/* a process the cell forked (python layer off) came back here: it is not the cell */
	if (getpid() != self)
		_exit(0);
	getrusage(RUSAGE_SELF, &ru);
	ru.ru_utime.tv_sec -= before->ru_utime.tv_sec;
	ru.ru_utime.tv_usec -= before->ru_utime.tv_usec;
	ru.ru_stime.tv_sec -= before->ru_stime.tv_sec;
	ru.ru_stime.tv_usec -= before->ru_stime.tv_usec;
	send_rec(PS_REC_CELL_DONE, 0, rc, NULL, &ru);
	if (q->kind != PS_SCMD_EXEC)
		_exit(0);	/* a query's fork is thrown away */
	setrlimit(RLIMIT_CPU, &was);
}

/* The next command for a cell from fd 0 (an input() answer for a cell that died is
 * dropped). 0 with *q and *code (NULL for PS_SCMD_SPARE), -1 when the host is gone.
 * Waited for in poll, read only once there: a spare killed while it waits (from inside the
 * session) must not take the command with it. Woken by the SIGKILL inside read(), a process
 * still copies what came meanwhile before it dies (pipe_read looks for data first), and
 * the holder's next spare would wait for a command that is gone (the host, told the spare
 * died before it took one, waits for that spare: the cell ran into its wall). */
static int next_command(struct ps_scmd *q, char **code)
{
	for (;;) {
		struct pollfd p = { .fd = CMD_FD, .events = POLLIN };

		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		if (ps_read_exact(CMD_FD, q, sizeof(*q)) < 0)
			return -1;
		if (q->magic != PS_SCMD_MAGIC)
			_exit(126);
		*code = NULL;
		if (q->kind == PS_SCMD_SPARE || q->kind == PS_SCMD_SHED)
			return 0;
		*code = read_body(q->len);
		if (q->kind != PS_SCMD_INPUT && *code)
			return 0;
		free(*code);
	}
}

/* A kept cell with threads still running: this process goes on as a fork of itself (only
 * the calling thread is copied; Python's after-fork marks the others gone), and the threaded
 * one sleeps until the host, which learns the copy from its FORKED record (err 1), kills it.
 * A fork refused: this process stays the holder, threads and all (the record says so). */
static void shed_threads(void)
{
	pid_t pid;

	for (int i = 0; (pid = ps_interp_fork()) < 0 && errno == EAGAIN && i < 200; i++)
		usleep(1000);
	if (pid > 0)
		for (;;)
			sleep(3600);
	send_rec(PS_REC_CELL_FORKED, (int32_t)getpid(), pid == 0 ? 1 : 2, NULL, NULL);
}

/* The spare's warm-up (ps_interp_cell_rehearse) with SIGINT held back: an interrupt for the
 * cell that lands meanwhile must not be a KeyboardInterrupt there, where pyshim may swallow
 * it; unblocked, it trips Python's handler and the cell raises it. */
static void rehearse(void)
{
	sigset_t intr, was;

	sigemptyset(&intr);
	sigaddset(&intr, SIGINT);
	sigprocmask(SIG_BLOCK, &intr, &was);
	ps_interp_cell_rehearse();
	sigprocmask(SIG_SETMASK, &was, NULL);
}

static bool command_waiting(void)
{
	struct pollfd p = { .fd = CMD_FD, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* The host closed its end of fd 0: the session is over. */
static bool host_gone(void)
{
	struct pollfd p = { .fd = CMD_FD, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

/* The spare, in the child: say FORKED, warm up while there is time (a command already
 * waiting runs at once: the rehearsal's faults would be the cell's anyway), take the command
 * and tell the holder so (a byte on took), run it. Returns when it is kept. */
static void spare(bool ahead, struct ps_scmd *q, char **code, int took)
{
	struct rusage ru;

	/* first, so that the host knows the cell before anything else it says */
	send_rec(PS_REC_CELL_FORKED, (int32_t)getpid(), 0, NULL, NULL);
	if (ahead) {
		if (!command_waiting())
			rehearse();
		if (next_command(q, code) < 0)
			_exit(0);
	}
	if (took >= 0) {
		(void)ps_write_all(took, "t", 1);
		close(took);
	}
	getrusage(RUSAGE_SELF, &ru);
	cell_child(q, *code, &ru);
	free(*code);
}

/* The holder's loop. Each cell is forked AHEAD of its command (the spare): right after the
 * holder starts, after it reaped a cell, and when the host says a kept cell is the holder
 * (PS_SCMD_SPARE), so that the fork is off the cell's path. The spare says FORKED, waits for
 * its command, runs it and, kept, goes round this loop as the holder. A holder that could
 * not fork ahead forks on the next command instead. A spare that died before it took its
 * command (killed from inside the session) left it in fd 0 for the next spare: the REAPED
 * record says so (phase 1), and the host waits for that one. Never returns. */
__attribute__((noreturn)) static void holder_loop(void)
{
	bool ahead = true;

	for (;;) {
		struct ps_scmd q = { 0 };
		struct rusage ru;
		char *code = NULL, b;
		int status = 0, took[2] = { -1, -1 };
		pid_t pid, r;

		if (!ahead && next_command(&q, &code) < 0)
			_exit(0);	/* the host is gone */
		if (!ahead && q.kind == PS_SCMD_SHED) {
			shed_threads();
			continue;	/* and waits for PS_SCMD_SPARE */
		}
		ahead = ahead || q.kind == PS_SCMD_SPARE;
		if (ahead && pipe2(took, O_CLOEXEC) < 0)
			took[0] = took[1] = -1;
		/* EAGAIN: RLIMIT_NPROC still counts the holders kept cells replaced, until their
		 * teardown ends and their reaper (the PID namespace's init, or the host, which
		 * reaps while it waits for this fork) has reaped them: usually a moment; under a
		 * sanitizer's shadow memory, or a loaded machine, up to hundreds of ms */
		for (int i = 0; (pid = ps_interp_fork()) < 0 && errno == EAGAIN && i < 2000; i++)
			usleep(1000);
		if (pid == 0) {
			if (took[0] >= 0)
				close(took[0]);
			spare(ahead, &q, &code, took[1]);
			ahead = false;	/* kept: the holder now, once the host says so */
			continue;
		}
		free(code);
		if (took[1] >= 0)
			close(took[1]);
		if (pid < 0) {
			if (!ahead)	/* a command that has no cell */
				send_rec(PS_REC_CELL_REAPED, -1, errno, NULL, NULL);
			if (took[0] >= 0)
				close(took[0]);
			ahead = false;
			continue;
		}
		do
			r = wait4(pid, &status, 0, &ru);
		while (r < 0 && errno == EINTR);
		/* its byte, or EOF: it died before it took a command */
		bool taken = took[0] < 0 || read(took[0], &b, 1) == 1;

		if (took[0] >= 0)
			close(took[0]);
		send_rec(PS_REC_CELL_REAPED, taken ? 0 : 1, r < 0 ? -1 : status, NULL,
			 r < 0 ? NULL : &ru);
		if (host_gone())
			_exit(0);
		ahead = true;	/* still the holder: the next cell ahead */
	}
}

void ps_session_holder_main(const char *token)
{
	char err[200];

	session_token = token;
	sigaction(SIGINT, &ps_session_py_sigint, NULL);
	if (ps_interp_cell_setup(REPORT_FD, input_line, err, sizeof(err)) < 0) {
		send_rec(PS_REC_PHASE_FAIL, -1, EINVAL, err, NULL);
		_exit(125);
	}
	holder_loop();
}
