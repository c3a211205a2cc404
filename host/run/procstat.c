/* /proc/PID/stat of a worker, read by its parent side. See procstat.h. */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* include/linux/sched.h; unchanged since 2.6 */
#define PF_EXITING 0x00000004UL	/* set by do_exit(), first thing */
#define PF_SIGNALED 0x00000400UL	/* set by get_signal() before a fatal signal's do_exit() */

int ps_procstat_open(pid_t pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	char path[40];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Not exited after the open: the pid was still this process's when we opened it. */
	if (poll(&p, 1, 0) != 0) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* Fields 4..last of a /proc/PID/stat line into v[4..last] (proc(5) numbers them from 1);
 * the state letter (field 3) is returned. "pid (comm) S ppid ...": comm may hold spaces and
 * parentheses, so the fields start after the last ')'. No malloc, no stdio: the child uses
 * this too. '\0' for a malformed line. */
static char parse_stat(char *buf, unsigned long long *v, int last)
{
	const char *p = strrchr(buf, ')');
	char state, *end;

	if (!p || p[1] != ' ' || !p[2])
		return '\0';
	state = p[2];
	p += 3;
	for (int field = 4; field <= last; field++) {
		v[field] = strtoull(p, &end, 10);	/* priority and nice may be negative */
		if (end == p)
			return '\0';
		p = end;
	}
	return state;
}

int ps_procstat_read(int fd, struct ps_procstat *st)
{
	enum { FLAGS = 9, THREADS = 20, START_CODE = 26, EXIT_CODE = 52 };
	char buf[1024];
	unsigned long long v[EXIT_CODE + 1];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	st->state = parse_stat(buf, v, EXIT_CODE);
	if (!st->state)
		return -EPROTO;
	st->flags = (unsigned long)v[FLAGS];
	st->threads = (long)v[THREADS];
	/* fs/proc/array.c: start_code is 1 to a reader the kernel refuses the task's details
	 * (ptrace_may_access), 0 once its memory is gone; exit_code is 0 to such a reader */
	st->details = v[START_CODE] > 1;
	st->exit_code = (int)v[EXIT_CODE];
	return 0;
}

int ps_procstat_scrub_self(bool argv)
{
	enum { ARG_START = 48, ARG_END, ENV_START, ENV_END };
	char buf[1024];
	unsigned long long v[ENV_END + 1];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (n < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	if (!parse_stat(buf, v, ENV_END) || v[ENV_END] < v[ENV_START] || v[ARG_END] < v[ARG_START])
		return -EPROTO;
	/* The areas the kernel copied the strings to at exec, on our own stack: writable. */
	explicit_bzero((void *)(uintptr_t)v[ENV_START], (size_t)(v[ENV_END] - v[ENV_START]));
	if (argv)
		explicit_bzero((void *)(uintptr_t)v[ARG_START], (size_t)(v[ARG_END] - v[ARG_START]));
	return 0;
}

bool ps_procstat_exiting_by_itself(const struct ps_procstat *st)
{
	return (st->flags & PF_EXITING) && !(st->flags & PF_SIGNALED) && st->threads == 1;
}

bool ps_procstat_exiting_alone(const struct ps_procstat *st, int exit_code)
{
	return ps_procstat_exiting_by_itself(st) && !strchr("ZXx", st->state) &&
	       st->exit_code == exit_code;
}

bool ps_procstat_signaled(const struct ps_procstat *st)
{
	return st->flags & PF_SIGNALED;
}

bool ps_procstat_unusable(const struct ps_procstat *st)
{
	return strchr("TtZXx", st->state) != NULL || (st->flags & PF_EXITING);
}

int ps_proc_cpu_clock_us(pid_t pid, uint64_t *us)
{
	/* MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_PROF) from the kernel's posix-timers.h */
	clockid_t clk = (clockid_t)((~(unsigned)pid << 3) | 0);
	struct timespec ts;

	if (clock_gettime(clk, &ts) < 0)
		return -errno;
	*us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	return 0;
}
