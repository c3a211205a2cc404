/* Naming the session's processes from the session host. The host may itself live in a PID
 * namespace (a zygote's child) while /proc shows the pids of the namespace it was mounted
 * in: a process has one pid per level (NSpid in /proc/PID/status), and we need two of them,
 * the one /proc names it by and the one our own calls (pidfd_open, kill) take. */
#include "host_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util/util.h"

enum { MAX_LEVELS = 32 };

/* The NSpid fields of /proc/<path>/status, outermost first. */
static int nspids(const char *path, pid_t *out, int max)
{
	char *buf = NULL, *p, *save = NULL;
	size_t len = 0;
	int n = 0;

	if (ps_read_file(path, &buf, &len) < 0)
		return 0;
	p = strstr(buf, "\nNSpid:");
	if (p) {
		char *end = strchr(p + 1, '\n');

		if (end)
			*end = '\0';
		for (char *tok = strtok_r(p + 7, " \t", &save); tok && n < max;
		     tok = strtok_r(NULL, " \t", &save))
			out[n++] = (pid_t)atoi(tok);
	}
	free(buf);
	return n;
}

/* Our level below /proc's namespace: 0 when /proc is our own. */
static int my_level(void)
{
	static int level = -1;
	pid_t f[MAX_LEVELS];

	if (level < 0)
		level = nspids("/proc/self/status", f, MAX_LEVELS) - 1;
	return level < 0 ? 0 : level;
}

int ps_host_find_child(pid_t parent_proc, pid_t inner, struct ps_host_pid *out)
{
	char path[96], *buf = NULL, *save = NULL;
	size_t len = 0;
	int found = -1, lv = my_level();

	if (parent_proc > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", parent_proc, parent_proc);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/children");
	if (ps_read_file(path, &buf, &len) < 0)
		return -1;
	for (char *tok = strtok_r(buf, " \n", &save); tok && found < 0;
	     tok = strtok_r(NULL, " \n", &save)) {
		pid_t f[MAX_LEVELS], cand = (pid_t)atoi(tok);
		char st[64];
		int n;

		snprintf(st, sizeof(st), "/proc/%d/status", cand);
		n = nspids(st, f, MAX_LEVELS);
		/* inner: its pid in its own (innermost) namespace, or (parent_proc <= 0) in ours */
		if (n > lv && f[parent_proc > 0 ? n - 1 : lv] == inner) {
			out->proc = cand;
			out->ours = f[lv];
			found = 0;
		}
	}
	free(buf);
	return found;
}

int ps_host_reap_others(pid_t keep)
{
	char *buf = NULL, *save = NULL;
	size_t len = 0;
	int left = 0;

	if (ps_read_file("/proc/thread-self/children", &buf, &len) < 0)
		return 0;
	for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		pid_t f[MAX_LEVELS], ours;
		char st[64];
		int n;

		snprintf(st, sizeof(st), "/proc/%s/status", tok);
		n = nspids(st, f, MAX_LEVELS);
		if (n <= my_level())
			continue;
		ours = f[my_level()];
		if (ours == keep)
			continue;
		if (waitpid(ours, NULL, WNOHANG) == 0)
			left++;
	}
	free(buf);
	return left;
}
