/* cgroup v2, when the policy names a delegated directory: one child cgroup per run with
 * memory.max, pids.max and cpu.max; the worker is born into it (clone3 CLONE_INTO_CGROUP
 * through ps_ns_fork_into), its peak memory and OOM kills are read after, and it is
 * removed. Parent side only. */
#ifndef PS_CGROUP_H
#define PS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"

struct ps_cgroup {
	int dir_fd;		/* O_DIRECTORY fd of the run's cgroup: clone3's cgroup field */
	char path[512];
};

struct ps_cgroup_stats {
	uint64_t memory_peak;	/* bytes; 0 if the kernel has no memory.peak */
	uint64_t oom_kills;	/* memory.events oom_kill */
};

/* Is parent a cgroup v2 directory we may use: cgroup2 file system, memory, pids and cpu
 * enabled in its cgroup.subtree_control, writable? 0, or -1 with the reason. */
int ps_cgroup_check(const char *parent, char *err, size_t errlen);

/* Make parent/pysnip-PID-N with the run's limits. 0, or -1 with the file that failed. */
int ps_cgroup_create(const char *parent, const struct ps_limits *l, struct ps_cgroup *cg,
		     char *err, size_t errlen);
/* What cpu.max gets for these limits: limits.cpus as a quota per 100 ms period, one CPU when
 * unset. */
void ps_cgroup_cpu_max(const struct ps_limits *l, char *buf, size_t len);
/* Fallback placement when clone3 can't: write pid to cgroup.procs. */
int ps_cgroup_enter(const struct ps_cgroup *cg, pid_t pid, char *err, size_t errlen);
void ps_cgroup_read_stats(const struct ps_cgroup *cg, struct ps_cgroup_stats *st);
/* Kill everything left in it (cgroup.kill), wait for it to empty, rmdir. */
int ps_cgroup_destroy(struct ps_cgroup *cg);

/* namespaces.c: ps_ns_fork that also places the child in cgroup_fd (-1: none) at birth. */
pid_t ps_ns_fork_into(unsigned long extra_flags, int cgroup_fd);

#endif
