/* The worker's mount namespace: what it sees of the host's file tree.
 *
 * Made private first (no mount of ours ever shows on the host), then: the scratch directory
 * as a size-capped tmpfs of the run's own; /proc as a procfs of the workers' PID namespace;
 * every other mount read-only but the policy's write paths. Landlock decides which files
 * may be opened; it has no right for chmod, chown, utimensat or xattrs, so the read-only
 * mounts are what keep the host's metadata as it was, whatever the uid. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "util/util.h"

bool ps_ns_probe_scratch_mount(const char *dir)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct ps_held held = { 0 };
		struct ps_child_err e;

		_exit(ps_ns_mount_scratch(dir, 4096, getuid(), getgid(), &held, &e) == 0 ? 0 : 1);
	}
	if (pid < 0)
		return false;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A mount namespace of our own, made private first so that no mount of ours ever shows
 * on the host. Once per process. */
static int private_mount_ns(struct ps_child_err *e)
{
	static bool done;

	if (done)
		return 0;
	if (!(ps_ns_fork_flags() & CLONE_NEWNS) && unshare(CLONE_NEWNS) < 0) {
		ps_child_err_set(e, errno, "unshare(CLONE_NEWNS): %s", ps_errstr(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		ps_child_err_set(e, errno, "mount(/, MS_REC|MS_PRIVATE): %s", ps_errstr(errno));
		return -1;
	}
	done = true;
	return 0;
}

/* Child: scratch becomes a tmpfs of at most `bytes`, mode 0700, owned by uid:gid (the run's
 * identity), in the worker's own mount namespace. */
int ps_ns_mount_scratch(const char *scratch, uint64_t bytes, uid_t uid, gid_t gid,
			struct ps_held *held, struct ps_child_err *e)
{
	char opts[128];

	if (private_mount_ns(e) < 0)
		return -1;
	/* tmpfs reads size=0 (or no size) as "half the RAM": a 0 here would loosen the policy,
	 * so it is refused (the schema keeps scratch at 4K or more). The inode cap keeps a
	 * flood of empty files from costing kernel memory unbounded. */
	if (bytes == 0) {
		ps_child_err_set(e, EINVAL, "mount(tmpfs on %s): size 0 would mean no limit",
				 scratch);
		return -1;
	}
	ps_fmt(opts, sizeof(opts), "mode=0700,uid=%u,gid=%u,nr_inodes=%llu,size=%llu",
	       (unsigned)uid, (unsigned)gid, (unsigned long long)(bytes / 4096 + 1024),
	       (unsigned long long)bytes);
	if (mount("pysnip-scratch", scratch, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
		ps_child_err_set(e, errno, "mount(tmpfs on %s, %s): %s", scratch, opts,
				 ps_errstr(errno));
		return -1;
	}
	held->namespaces |= ps_ns_fork_flags() | CLONE_NEWNS;
	held->scratch_capped = true;
	return 0;
}

/* struct mount_attr and its flags (linux/mount.h clashes with sys/mount.h). */
struct ps_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};
#define PS_MOUNT_ATTR_RDONLY 0x1ULL
#define PS_AT_RECURSIVE 0x8000

static int mount_rdonly(const char *path, bool on, unsigned flags, struct ps_child_err *e)
{
	struct ps_mount_attr a = { 0 };

	if (on)
		a.attr_set = PS_MOUNT_ATTR_RDONLY;
	else
		a.attr_clr = PS_MOUNT_ATTR_RDONLY;
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, sizeof(a)) < 0) {
		ps_child_err_set(e, errno, "mount_setattr(%s, %s MOUNT_ATTR_RDONLY%s): %s", path,
				 on ? "set" : "clear", flags ? ", AT_RECURSIVE" : "",
				 ps_errstr(errno));
		return -1;
	}
	return 0;
}

/* /proc as our own PID namespace shows it, only processes we could ptrace (hidepid, so a
 * worker of a zygote does not see its neighbours, which are not dumpable) and nothing but
 * processes (subset=pid: no /proc/sys, kallsyms, ...). Without a PID namespace of our own,
 * or where the kernel refuses that proc, no /proc at all: an empty read-only tmpfs. */
static int mount_own_proc(bool own_pidns, struct ps_child_err *e)
{
	static const char *const opts[] = { "hidepid=invisible,subset=pid", "hidepid=2" };
	const unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;

	for (size_t i = 0; own_pidns && i < PS_ARRAY_LEN(opts); i++)
		if (mount("proc", "/proc", "proc", fl, opts[i]) == 0)
			return 0;
	if (mount("pysnip-noproc", "/proc", "tmpfs", fl | MS_RDONLY, "size=4k,mode=0555") < 0) {
		ps_child_err_set(e, errno, "mount(empty tmpfs on /proc): %s", ps_errstr(errno));
		return -1;
	}
	return 0;
}

enum { SEAL_MAX_RW = 64 };

int ps_ns_seal_view(const char *scratch, bool scratch_mounted, const char *const *rw, size_t n_rw,
		    bool own_pidns, struct ps_child_err *e)
{
	const char *clear[SEAL_MAX_RW + 1];
	size_t n_clear = 0;

	if (private_mount_ns(e) < 0 || mount_own_proc(own_pidns, e) < 0)
		return -1;
	if (n_rw > SEAL_MAX_RW) {
		ps_child_err_set(e, E2BIG, "read-only view: %zu write paths, at most %d", n_rw,
				 SEAL_MAX_RW);
		return -1;
	}
	/* Each writable path becomes a mount of its own (a bind onto itself), so that it can
	 * stay writable under a read-only rest. One the host already mounts read-only stays so. */
	for (size_t i = 0; i <= n_rw; i++) {
		const char *path = i < n_rw ? rw[i] : scratch;
		struct statvfs sv;

		if (i == n_rw && scratch_mounted) {
			clear[n_clear++] = scratch;	/* already the root of its own tmpfs */
			continue;
		}
		if (!path || statvfs(path, &sv) < 0 || (sv.f_flag & ST_RDONLY))
			continue;
		if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0) {
			ps_child_err_set(e, errno, "mount(%s, MS_BIND): %s", path, ps_errstr(errno));
			return -1;
		}
		clear[n_clear++] = path;
	}
	if (mount_rdonly("/", true, PS_AT_RECURSIVE, e) < 0)
		return -1;
	for (size_t i = 0; i < n_clear; i++)
		if (mount_rdonly(clear[i], false, 0, e) < 0)
			return -1;
	return 0;
}
