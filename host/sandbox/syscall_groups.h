/* Named syscall groups for the seccomp allowlist: one table, each group with a help
 * string. Policies name groups in "seccomp.groups"; seccomp.c resolves them. */
#ifndef PS_SYSCALL_GROUPS_H
#define PS_SYSCALL_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

struct ps_syscall_group {
	const char *name;		/* "@basic-io" */
	const char *help;		/* one line: what it is for */
	const char *const *syscalls;	/* NULL-terminated */
	/* 0: the group's syscalls are allowed. Otherwise they fail with this errno: calls a
	 * library only probes, which must see a clean error (its OSError path), not SIGSYS. Such
	 * a group may list never-allowed syscalls: failing them keeps them denied. */
	int fail_errno;
};

/* Sorted by name; a syscall appears in at most one group. */
extern const struct ps_syscall_group ps_syscall_groups[];
extern const size_t ps_syscall_groups_count;

/* Never allowed, whatever the policy says (NULL-terminated). No group lists one, and a
 * policy's "seccomp.allow" naming one is an error. */
extern const char *const ps_syscalls_never[];

const struct ps_syscall_group *ps_syscall_group_find(const char *name);
bool ps_syscall_never_allowed(const char *name);

#endif
