/* cgroup v2 per-run cgroups, against the real kernel.
 *
 * Needs a delegated cgroup v2 directory with memory, pids and cpu enabled for children:
 * $PYSNIP_CGROUP_PARENT, else /sys/fs/cgroup/pysnip and /sys/fs/cgroup/unified/pysnip are
 * tried. Without one the real part is skipped, saying why; the refusal checks always run. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "harness.h"

static void test_refusals(void)
{
	char err[256] = "";

	CHECK(ps_cgroup_check("/nonexistent-pysnip", err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "statfs(/nonexistent-pysnip)");
	CHECK(ps_cgroup_check("/tmp", err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "is not on a cgroup v2 file system");
}

/* What cpu.max would get: the policy's CPU share per 100 ms period (--cpus 0.5), one CPU
 * when unset, never under the kernel's 1 ms minimum. No cgroup needed to check it. */
static void test_cpu_max_value(void)
{
	struct ps_limits l = { 0 };
	char v[64];

	ps_cgroup_cpu_max(&l, v, sizeof(v));
	CHECK_STR(v, "100000 100000");
	l.cpus_milli = 500;
	ps_cgroup_cpu_max(&l, v, sizeof(v));
	CHECK_STR(v, "50000 100000");
	l.cpus_milli = 2000;
	ps_cgroup_cpu_max(&l, v, sizeof(v));
	CHECK_STR(v, "200000 100000");
	l.cpus_milli = 1;
	ps_cgroup_cpu_max(&l, v, sizeof(v));
	CHECK_STR(v, "1000 100000");
}

static const char *find_parent(char *why, size_t len)
{
	static const char *const candidates[] = { "/sys/fs/cgroup/pysnip",
						   "/sys/fs/cgroup/unified/pysnip", NULL };
	const char *env = getenv("PYSNIP_CGROUP_PARENT");

	if (env && *env)
		return ps_cgroup_check(env, why, len) == 0 ? env : NULL;
	for (size_t i = 0; candidates[i]; i++)
		if (ps_cgroup_check(candidates[i], why, len) == 0)
			return candidates[i];
	return NULL;
}

/* A child born in the cgroup, over its pids.max, then the cgroup removed. */
static void test_real(const char *parent)
{
	struct ps_limits l = { .memory_bytes = 64 << 20, .processes = 2 };
	struct ps_cgroup cg;
	struct ps_cgroup_stats st;
	char err[256] = "";
	int status;
	pid_t pid;

	CHECK(ps_cgroup_create(parent, &l, &cg, err, sizeof(err)) == 0);
	pid = ps_ns_fork_into(0, cg.dir_fd);
	if (pid == 0) {
		/* pids.max = 2: the third fork must fail. */
		pid_t a = fork(), b = a > 0 ? fork() : -1;

		if (a == 0 || b == 0)
			pause();
		_exit(a > 0 && b < 0 && errno == EAGAIN ? 0 : 1);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ps_cgroup_read_stats(&cg, &st);
	CHECK(st.oom_kills == 0);
	CHECK(ps_cgroup_destroy(&cg) == 0);
	CHECK(access(cg.path, F_OK) < 0);
}

int main(void)
{
	char why[256] = "";
	const char *parent;

	test_refusals();
	test_cpu_max_value();
	parent = find_parent(why, sizeof(why));
	if (parent)
		test_real(parent);
	else
		printf("test_cgroup: SKIPPED the real cgroup checks: no delegated cgroup v2 "
		       "directory (set PYSNIP_CGROUP_PARENT): %s\n", why);
	return ps_test_done("test_cgroup");
}
