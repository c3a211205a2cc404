/* Invariants of the syscall group table (host/syscall_groups.c) and of the filter built
 * from it: sorted, unique, documented, every name real on x86-64, nothing dangerous in any
 * group, and bad policy names rejected with a message naming the field. */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscall_groups.h"

/* What issue 3 says must be denied, whatever groups a policy picks. */
static const char *const must_deny[] = {
	"fork", "vfork", "clone", "clone3", "execve", "execveat", "ptrace", "process_vm_readv",
	"process_vm_writev", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "mount",
	"umount2", "pivot_root", "chroot", "unshare", "setns", "personality", "init_module",
	"finit_module", "delete_module", "kexec_load", "kexec_file_load", "socket", "reboot",
	NULL,
};

static void test_sorted_and_documented(void)
{
	for (size_t i = 0; i < ps_syscall_groups_count; i++) {
		const struct ps_syscall_group *g = &ps_syscall_groups[i];

		CHECK(g->name[0] == '@');
		CHECK(g->help && strlen(g->help) > 10);
		CHECK(g->syscalls && g->syscalls[0]);
		if (i > 0)
			CHECK(strcmp(ps_syscall_groups[i - 1].name, g->name) < 0);
		for (size_t j = 1; g->syscalls[j]; j++)
			CHECK(strcmp(g->syscalls[j - 1], g->syscalls[j]) < 0);
		CHECK(ps_syscall_group_find(g->name) == g);
	}
	CHECK(ps_syscall_group_find("@nope") == NULL);
	CHECK(ps_syscall_group_find("") == NULL);
}

/* Each name resolves on x86-64 and appears in one group only. */
static void test_names_resolve_and_unique(void)
{
	for (size_t i = 0; i < ps_syscall_groups_count; i++) {
		for (const char *const *s = ps_syscall_groups[i].syscalls; *s; s++) {
			int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, *s);

			if (nr < 0)
				fprintf(stderr, "unresolved: %s\n", *s);
			CHECK(nr >= 0);
			for (size_t k = i + 1; k < ps_syscall_groups_count; k++)
				for (const char *const *t = ps_syscall_groups[k].syscalls; *t; t++)
					if (strcmp(*s, *t) == 0) {
						fprintf(stderr, "%s in %s and %s\n", *s,
							ps_syscall_groups[i].name,
							ps_syscall_groups[k].name);
						CHECK(!"syscall in two groups");
					}
		}
	}
	for (const char *const *s = ps_syscalls_never; *s; s++)
		CHECK(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, *s) >= 0);
}

/* Nothing dangerous in a group: never-allowed ones, and issue 3's list. */
static void test_no_dangerous_in_groups(void)
{
	for (const char *const *d = must_deny; *d; d++) {
		if (strcmp(*d, "clone") != 0)
			CHECK(ps_syscall_never_allowed(*d));
		for (size_t i = 0; i < ps_syscall_groups_count; i++)
			for (const char *const *s = ps_syscall_groups[i].syscalls;
			     *s && !ps_syscall_groups[i].fail_errno; s++)
				if (strcmp(*s, *d) == 0) {
					fprintf(stderr, "%s lists %s\n", ps_syscall_groups[i].name, *d);
					CHECK(!"dangerous syscall in a group");
				}
	}
	for (const char *const *n = ps_syscalls_never; *n; n++)
		for (size_t i = 0; i < ps_syscall_groups_count; i++)
			for (const char *const *s = ps_syscall_groups[i].syscalls;
			     *s && !ps_syscall_groups[i].fail_errno; s++)
				CHECK(strcmp(*s, *n) != 0);
}

/* A group that fails its syscalls fails them with a real errno, and allows none. */
static void test_errno_groups(void)
{
	size_t n = 0;

	for (size_t i = 0; i < ps_syscall_groups_count; i++) {
		if (!ps_syscall_groups[i].fail_errno)
			continue;
		n++;
		CHECK(ps_syscall_groups[i].fail_errno > 0 && ps_syscall_groups[i].fail_errno < 4096);
	}
	CHECK(n >= 3);	/* @exec-probe, @net-probe, @numa-probe */
	CHECK(ps_syscall_group_find("@exec-probe")->fail_errno == EPERM);
}

static void init_policy(struct ps_policy *p, const char *group, const char *extra)
{
	memset(p, 0, sizeof(*p));
	p->path = (char *)"test.json";
	p->seccomp_action = PS_SECCOMP_KILL;
	for (size_t i = 0; i < ps_syscall_groups_count; i++)
		ps_strlist_push(&p->syscall_groups, ps_syscall_groups[i].name);
	if (group)
		ps_strlist_push(&p->syscall_groups, group);
	if (extra)
		ps_strlist_push(&p->syscalls_allow, extra);
}

static void build_expect(const char *group, const char *extra, const char *want_err)
{
	struct ps_policy p;
	struct ps_filter *f = NULL;
	char err[256] = "";
	int rc;

	init_policy(&p, group, extra);
	rc = ps_filter_build(&p, &f, err, sizeof(err));
	if (want_err) {
		CHECK(rc == -1);
		CHECK(f == NULL);
		CHECK_CONTAINS(err, want_err);
	} else {
		if (rc != 0)
			fprintf(stderr, "build failed: %s\n", err);
		CHECK(rc == 0);
		CHECK(f != NULL);
	}
	ps_filter_free(f);
	ps_strlist_free(&p.syscall_groups);
	ps_strlist_free(&p.syscalls_allow);
}

static void test_filter_build(void)
{
	build_expect(NULL, NULL, NULL);
	build_expect(NULL, "getcpu", NULL);
	build_expect("@x", NULL,
		     "policy test.json: field seccomp.groups: unknown syscall group '@x'");
	build_expect(NULL, "execve", "field seccomp.allow: syscall 'execve' can never be allowed");
	build_expect(NULL, "ioctl", "field seccomp.allow: syscall 'ioctl' is allowed only with");
	build_expect(NULL, "fcntl", "field seccomp.allow: syscall 'fcntl' is allowed only with");
	build_expect(NULL, "no_such_call", "field seccomp.allow: syscall 'no_such_call' is not");
}

static void test_names(void)
{
	CHECK_STR(ps_syscall_name(59), "execve");
	CHECK_STR(ps_syscall_name(0), "read");
	CHECK_STR(ps_syscall_name_arch(11, 0x40000003 /* AUDIT_ARCH_I386 */), "execve (arch 0x40000003)");
	CHECK_STR(ps_syscall_name(99999), "syscall 99999");
}

int main(void)
{
	test_sorted_and_documented();
	test_errno_groups();
	test_names_resolve_and_unique();
	test_no_dangerous_in_groups();
	test_filter_build();
	test_names();
	return ps_test_done("test_syscall_groups");
}
