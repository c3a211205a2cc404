/* /proc/PID/stat of a worker, read by its parent side. See procstat.h. */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int ps_procstat_read(int fd, struct ps_procstat *st)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	const char *p;
	char *end;

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* "pid (comm) S ppid pgrp session tty tpgid flags ... num_threads(20)": comm may hold
	 * spaces and parentheses, so the fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	st->state = p[2];
	p += 3;
	for (int field = 4; field <= 20; field++) {
		long long v = strtoll(p, &end, 10);

		if (end == p)
			return -EPROTO;
		if (field == 9)
			st->flags = (unsigned long)v;
		else if (field == 20)
			st->threads = (long)v;
		p = end;
	}
	return 0;
}

bool ps_procstat_exiting_by_itself(const struct ps_procstat *st)
{
	return (st->flags & PF_EXITING) && !(st->flags & PF_SIGNALED) && st->threads == 1;
}

bool ps_procstat_signaled(const struct ps_procstat *st)
{
	return st->flags & PF_SIGNALED;
}

bool ps_procstat_unusable(const struct ps_procstat *st)
{
	return strchr("TtZXx", st->state) != NULL || (st->flags & PF_EXITING);
}
