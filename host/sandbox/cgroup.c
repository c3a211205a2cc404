/* cgroup v2 per-run limits in a delegated directory (see cgroup.h).
 *
 * rlimits count per process and per uid; a cgroup counts the run as a whole (all its
 * threads, page cache it dirtied, kernel memory) and reports the peak and OOM kills.
 * It needs a v2 directory delegated to us with the memory, pids and cpu controllers
 * enabled for children; without one, the rlimits stand alone and the verdict says so. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const char *const needed_controllers[] = { "memory", "pids", "cpu" };

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

int ps_cgroup_check(const char *parent, char *err, size_t errlen)
{
	char path[600], *ctl = NULL;
	struct statfs sf;
	size_t len;
	int rc;

	if (statfs(parent, &sf) < 0) {
		snprintf(err, errlen, "cgroup: statfs(%s): %s", parent, strerror(errno));
		return -1;
	}
	if ((unsigned long)sf.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(err, errlen, "cgroup: %s is not on a cgroup v2 file system", parent);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	rc = ps_read_file(path, &ctl, &len);
	if (rc < 0) {
		snprintf(err, errlen, "cgroup: read %s: %s", path, strerror(-rc));
		return -1;
	}
	for (size_t i = 0; i < PS_ARRAY_LEN(needed_controllers); i++) {
		if (!has_word(ctl, needed_controllers[i])) {
			snprintf(err, errlen, "cgroup: %s does not enable the '%s' controller", path,
				 needed_controllers[i]);
			free(ctl);
			return -1;
		}
	}
	free(ctl);
	if (access(parent, W_OK) < 0) {
		snprintf(err, errlen, "cgroup: %s is not writable: %s", parent, strerror(errno));
		return -1;
	}
	return 0;
}

static int write_at(const struct ps_cgroup *cg, const char *file, const char *value, char *err,
		    size_t errlen)
{
	int fd = openat(cg->dir_fd, file, O_WRONLY | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		snprintf(err, errlen, "cgroup: open(%s/%s): %s", cg->path, file, strerror(errno));
		return -1;
	}
	rc = ps_write_all(fd, value, strlen(value));
	close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "cgroup: write(%s/%s, \"%s\"): %s", cg->path, file, value,
			 strerror(-rc));
		return -1;
	}
	return 0;
}

int ps_cgroup_create(const char *parent, const struct ps_limits *l, struct ps_cgroup *cg,
		     char *err, size_t errlen)
{
	static unsigned counter;
	char v[64];

	cg->dir_fd = -1;
	snprintf(cg->path, sizeof(cg->path), "%s/pysnip-%d-%u", parent, (int)getpid(), counter++);
	if (mkdir(cg->path, 0755) < 0) {
		snprintf(err, errlen, "cgroup: mkdir(%s): %s", cg->path, strerror(errno));
		return -1;
	}
	/* Not O_PATH: clone3's CLONE_INTO_CGROUP refuses O_PATH descriptors. */
	cg->dir_fd = open(cg->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (cg->dir_fd < 0) {
		snprintf(err, errlen, "cgroup: open(%s): %s", cg->path, strerror(errno));
		goto fail;
	}
	if (l->memory_bytes) {
		snprintf(v, sizeof(v), "%" PRIu64, l->memory_bytes);
		if (write_at(cg, "memory.max", v, err, errlen) < 0)
			goto fail;
		/* Swap would let a run outgrow memory.max silently; absent without swap accounting. */
		if (faccessat(cg->dir_fd, "memory.swap.max", W_OK, 0) == 0 &&
		    write_at(cg, "memory.swap.max", "0", err, errlen) < 0)
			goto fail;
	}
	if (l->processes) {
		snprintf(v, sizeof(v), "%" PRIu64, l->processes);
		if (write_at(cg, "pids.max", v, err, errlen) < 0)
			goto fail;
	}
	/* At most one CPU's worth of time per period (or the policy's share): a threaded run
	 * can't take the host. */
	ps_cgroup_cpu_max(l, v, sizeof(v));
	if (write_at(cg, "cpu.max", v, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	ps_cgroup_destroy(cg);
	return -1;
}

void ps_cgroup_cpu_max(const struct ps_limits *l, char *buf, size_t len)
{
	uint64_t milli = l->cpus_milli ? l->cpus_milli : 1000;

	/* quota per 100 ms period: 0.5 CPUs -> "50000 100000", 2 -> "200000 100000"; the kernel
	 * refuses quotas under 1 ms */
	snprintf(buf, len, "%" PRIu64 " 100000", milli * 100 < 1000 ? 1000 : milli * 100);
}

int ps_cgroup_enter(const struct ps_cgroup *cg, pid_t pid, char *err, size_t errlen)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)pid);
	return write_at(cg, "cgroup.procs", v, err, errlen);
}

static uint64_t read_key(const struct ps_cgroup *cg, const char *file, const char *key)
{
	char path[700], *buf = NULL, *p;
	uint64_t v = 0;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", cg->path, file);
	if (ps_read_file(path, &buf, &len) < 0)
		return 0;
	if (!key) {
		v = strtoull(buf, NULL, 10);
	} else {
		size_t n = strlen(key);

		for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
			if (strncmp(p, key, n) == 0 && p[n] == ' ') {
				v = strtoull(p + n + 1, NULL, 10);
				break;
			}
		}
	}
	free(buf);
	return v;
}

void ps_cgroup_read_stats(const struct ps_cgroup *cg, struct ps_cgroup_stats *st)
{
	st->memory_peak = read_key(cg, "memory.peak", NULL);
	st->oom_kills = read_key(cg, "memory.events", "oom_kill");
}

int ps_cgroup_destroy(struct ps_cgroup *cg)
{
	int rc = 0;

	if (!cg->path[0])
		return 0;
	if (cg->dir_fd >= 0) {
		int fd = openat(cg->dir_fd, "cgroup.kill", O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			(void)ps_write_all(fd, "1", 1);
			close(fd);
		}
		close(cg->dir_fd);
		cg->dir_fd = -1;
	}
	/* Killed tasks leave asynchronously: rmdir says EBUSY until the last is gone. */
	for (int i = 0; i < 200; i++) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		if (rmdir(cg->path) == 0 || errno == ENOENT) {
			rc = 0;
			break;
		}
		rc = -errno;
		if (errno != EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	cg->path[0] = '\0';
	return rc;
}
