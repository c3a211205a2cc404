/* Namespaces: what the worker can see of the host.
 *
 * Two kinds, so that a zygote pays for the first kind once:
 *  - unchanging ones (network, IPC, UTS; a user namespace first when not root) entered by
 *    the parent in ps_ns_enter_static, inherited by every worker. The network namespace is
 *    empty: not even loopback is up.
 *    A PID namespace too, whose init is a tiny holder process forked once: workers are
 *    ordinary processes in it (not PID 1, whose default signal dispositions the kernel
 *    ignores: abort() and kill(getpid()) would not behave as on any Linux), they see and
 *    signal nothing outside, and the holder reaps what they orphan.
 *  - a per-run mount namespace given to each worker at birth by ps_ns_fork, so it can mount
 *    its scratch tmpfs privately (what it mounts there: mounts.c).
 * As root this needs nothing more; not root, it needs unprivileged user namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <linux/nsfs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "sandbox.h"
#include "util/util.h"

#define STATIC_NS (CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
#define PER_RUN_NS CLONE_NEWNS
#define SHARED_NETNS_DIR "/run/pysnip"
#define SHARED_NETNS SHARED_NETNS_DIR "/netns"

static int write_file(const char *path, const char *text, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		snprintf(err, errlen, "open(%s): %s", path, strerror(errno));
		return -1;
	}
	rc = ps_write_all(fd, text, strlen(text));
	close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "write(%s, \"%s\"): %s", path, text, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Not root: a user namespace in which we keep our own uid and gid (mapped to themselves),
 * so files look the same and we hold capabilities only over namespaces we create. */
static int enter_user_ns(char *err, size_t errlen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER) < 0) {
		snprintf(err, errlen, "unshare(CLONE_NEWUSER): %s", strerror(errno));
		return -1;
	}
	/* An unprivileged gid_map needs setgroups denied first (else dropping groups could
	 * unlock files that deny access by group). */
	if (write_file("/proc/self/setgroups", "deny", err, errlen) < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map, err, errlen) < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map, err, errlen);
}

static void holder_reap(int sig)
{
	(void)sig;
}

/* PID 1 of the workers' namespace: reap, and end (taking every worker with it) when the
 * pipe from its creator reads EOF, i.e. the creator is gone. */
static __attribute__((noreturn)) void holder_main(int alive_fd)
{
	struct sigaction sa = { .sa_handler = holder_reap };
	struct pollfd pfd = { .fd = alive_fd, .events = POLLIN };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "pysnip-init");
	sigaction(SIGCHLD, &sa, NULL);	/* no SA_RESTART: poll returns to reap */
	if (alive_fd != 3 && dup2(alive_fd, 3) < 0)
		_exit(1);
	syscall(SYS_close_range, 0, 2, 0);
	syscall(SYS_close_range, 4, ~0U, 0);
	pfd.fd = 3;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		if (poll(&pfd, 1, -1) > 0)
			_exit(0);
	}
}

static pid_t holder_pid = -1;
static int holder_alive_fd = -1;

void ps_ns_release_start(void)
{
	if (holder_alive_fd < 0)
		return;
	close(holder_alive_fd);
	holder_alive_fd = -1;
	kill(holder_pid, SIGKILL);
}

void ps_ns_release(void)
{
	if (holder_pid <= 0)
		return;
	ps_ns_release_start();
	while (waitpid(holder_pid, NULL, 0) < 0 && errno == EINTR)
		;
	holder_pid = -1;
}

static int enter_pid_ns(char *err, size_t errlen)
{
	int alive[2];
	pid_t holder;

	if (unshare(CLONE_NEWPID) < 0) {
		snprintf(err, errlen, "unshare(CLONE_NEWPID): %s", strerror(errno));
		return -1;
	}
	if (pipe2(alive, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe2(): %s", strerror(errno));
		return -1;
	}
	holder = fork();
	if (holder < 0) {
		snprintf(err, errlen, "fork(pid namespace init): %s", strerror(errno));
		close(alive[0]);
		close(alive[1]);
		return -1;
	}
	if (holder == 0)
		holder_main(alive[0]);
	close(alive[0]);
	/* alive[1] stays open, unread, until ps_ns_release or this process ends. */
	holder_pid = holder;
	holder_alive_fd = alive[1];
	return 0;
}

/* Is fd an empty network namespace we may join: nsfs of type net. */
static bool is_netns(int fd)
{
	return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

/* Make the kept namespace: a child unshares a network namespace and bind-mounts it on
 * SHARED_NETNS (like `ip netns add`), under a lock so concurrent first runs agree. */
static int make_shared_netns(char *err, size_t errlen)
{
	int lock, fd, status = 0;
	pid_t pid;

	if (mkdir(SHARED_NETNS_DIR, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir(%s): %s", SHARED_NETNS_DIR, strerror(errno));
		return -1;
	}
	lock = open(SHARED_NETNS_DIR "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		snprintf(err, errlen, "lock %s/lock: %s", SHARED_NETNS_DIR, strerror(errno));
		if (lock >= 0)
			close(lock);
		return -1;
	}
	fd = open(SHARED_NETNS, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && is_netns(fd)) {
		close(fd);
		close(lock);
		return 0;	/* another run made it meanwhile */
	}
	if (fd >= 0)
		close(fd);
	fd = open(SHARED_NETNS, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) == 0 &&
		      mount("/proc/self/ns/net", SHARED_NETNS, NULL, MS_BIND, NULL) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "bind-mounting a new network namespace on %s failed",
			 SHARED_NETNS);
		close(lock);
		return -1;
	}
	close(lock);
	return 0;
}

/* Root: join the kept empty network namespace. Making one costs ~1 ms and tearing it down
 * more, on every one-shot run; nothing in it changes (no interface is up, and a worker holds
 * no capability over it), so one serves every run. -1 (err set) to fall back to unshare. */
static int join_shared_netns(char *err, size_t errlen)
{
	int fd = open(SHARED_NETNS, O_RDONLY | O_CLOEXEC);

	if ((fd < 0 || !is_netns(fd)) && make_shared_netns(err, errlen) == 0) {
		if (fd >= 0)
			close(fd);
		fd = open(SHARED_NETNS, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || !is_netns(fd) || setns(fd, CLONE_NEWNET) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int ps_ns_enter_static(const struct ps_policy *p, bool best_effort, char *err, size_t errlen)
{
	int entered = 0;
	int flags = STATIC_NS;

	(void)p;
	if (geteuid() != 0) {
		if (enter_user_ns(err, errlen) < 0)
			goto fail;
		entered |= CLONE_NEWUSER;
	} else if (join_shared_netns(err, errlen) == 0) {
		flags &= ~CLONE_NEWNET;
	}
	if (unshare(flags) < 0) {
		snprintf(err, errlen, "unshare(%s): %s",
			 flags & CLONE_NEWNET ? "CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS"
					      : "CLONE_NEWIPC|CLONE_NEWUTS",
			 strerror(errno));
		goto fail;
	}
	entered |= STATIC_NS;
	if (enter_pid_ns(err, errlen) < 0)
		goto fail;
	entered |= CLONE_NEWPID;
	/* The snippet's platform.node(): nothing about the host. */
	if (sethostname("pysnip", 6) < 0) {
		snprintf(err, errlen, "sethostname(pysnip): %s", strerror(errno));
		goto fail;
	}
	return entered;
fail:
	/* best-effort: whatever was entered stays (it only takes away), report none of it as
	 * the full layer so the verdict shows the degradation. */
	return best_effort ? entered & CLONE_NEWUSER : -1;
}

/* glibc keeps the thread's tid in its thread control block (raise(), pthread_kill and
 * recursive mutexes read it). fork() updates it; a raw clone() does not, so we ask the
 * kernel to (CLONE_CHILD_SETTID) at the field's address. glibc does not export that
 * address: find it once by its value, and only trust a single match. */
static pid_t *tcb_tid_field(void)
{
	static pid_t *field;
	static bool probed;
	char *self = (char *)pthread_self();
	pid_t tid = (pid_t)syscall(SYS_gettid);
	size_t hits = 0;

	if (probed)
		return field;
	probed = true;
	for (size_t off = 0; off + sizeof(pid_t) <= 1024; off += sizeof(pid_t)) {
		if (*(pid_t *)(self + off) == tid) {
			field = (pid_t *)(self + off);
			hits++;
		}
	}
	if (hits != 1)
		field = NULL;
	return field;
}

static uint32_t forked_ns;

uint32_t ps_ns_fork_flags(void)
{
	return forked_ns;
}

/* struct clone_args up to CLONE_INTO_CGROUP's field (Linux 5.7), the size we pass. */
struct ps_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

static long clone_into(unsigned long flags, pid_t *tid_field, int cgroup_fd)
{
	struct ps_clone_args a;

	if (cgroup_fd < 0)
		return syscall(SYS_clone, flags, NULL, NULL, tid_field, 0);
	memset(&a, 0, sizeof(a));
	a.flags = (flags & ~0xffUL) | CLONE_INTO_CGROUP;
	a.exit_signal = flags & 0xff;
	a.child_tid = (uint64_t)(uintptr_t)tid_field;
	a.cgroup = (uint64_t)cgroup_fd;
	return syscall(SYS_clone3, &a, sizeof(a));
}

pid_t ps_ns_fork(unsigned long extra_flags)
{
	return ps_ns_fork_into(extra_flags, -1);
}

/* cgroup_fd >= 0: born inside that cgroup (clone3), so not one instruction of the worker
 * runs outside its limits. ns_flags may be 0 (namespaces layer off). */
pid_t ps_ns_fork_into(unsigned long extra_flags, int cgroup_fd)
{
	unsigned long flags = SIGCHLD | PER_RUN_NS | extra_flags;
	pid_t *tid_field = tcb_tid_field();
	long pid;

	if (tid_field)
		flags |= CLONE_CHILD_SETTID;
	pid = clone_into(flags, tid_field, cgroup_fd);
	if (pid < 0 && (errno == EPERM || errno == EINVAL || errno == ENOSPC || errno == EUSERS)) {
		/* No namespaces to be had here: an ordinary child (still in its cgroup), and
		 * the child knows it. */
		flags &= ~(unsigned long)PER_RUN_NS;
		pid = cgroup_fd < 0 ? fork() : clone_into(flags, tid_field, cgroup_fd);
	}
	if (pid == 0)
		forked_ns = (uint32_t)(flags & PER_RUN_NS);
	return (pid_t)pid;
}
