/* The seccomp allowlist: built and compiled to BPF in the parent (libseccomp), loaded in
 * the worker as its last phase, where nothing may allocate.
 *
 * One filter is loaded, one program:
 *  - a seven-instruction prefix that lets kill/tgkill reach only the worker itself: its pid
 *    is known only after fork, so the worker writes it into its copy of the program;
 *  - the policy's allowlist (groups of syscall_groups.c plus a few argument-checked rules
 *    below), compiled once per policy by libseccomp.
 *
 * Default action "kill": SECCOMP_RET_TRAP and a SIGSYS handler that writes the trapped
 * syscall to the status pipe and then dies by the filter (see sigsys_handler). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "sandbox.h"
#include "syscall_groups.h"
#include "util/util.h"

struct ps_filter {
	struct sock_filter *insns;
	unsigned short len;
	enum ps_seccomp_action action;
	int errno_val;
	bool session;	/* a session holder's: fork allowed, signals within the session */
};

static uint32_t ret_action(const struct ps_filter *f)
{
	switch (f->action) {
	case PS_SECCOMP_KILL:
		return SECCOMP_RET_TRAP;
	case PS_SECCOMP_ERRNO:
		return SECCOMP_RET_ERRNO | ((uint32_t)f->errno_val & SECCOMP_RET_DATA);
	case PS_SECCOMP_KILL_PROCESS:
		break;
	}
	return SECCOMP_RET_KILL_PROCESS;
}

/* Ahead of libseccomp's program, in the same filter: kill and tgkill only to ourselves (or
 * our process group, which is only us), whatever the allowlist says of them. The worker
 * writes its pid into the SELF_INSN before loading (ps_filter_load); everything else falls
 * through to the allowlist, which starts by checking the architecture. One filter, not two:
 * every attached filter costs a JIT and the kernel's per-syscall cache (computed with
 * interrupts off), ~10-15 us even for a small one, measured. */
enum { SELF_INSN = 4, PREFIX_LEN = 7 };

static void write_prefix(const struct ps_filter *f, struct sock_filter *out)
{
	const struct sock_filter prefix[PREFIX_LEN] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
		/* The kernel reads a pid_t: the low 32 bits of the argument (little endian). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0 /* SELF_INSN: our pid */, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, ret_action(f)),
	};

	memcpy(out, prefix, sizeof(prefix));
	/* A session's cells are forks of its holder: no pid is known when the filter loads.
	 * Any positive pid or our group (0) passes to the allowlist, never a negative one
	 * (-1: every process we may signal; -pgid: another group). Which processes a positive
	 * pid reaches is bounded by the session's uid and PID namespace (SECURITY.md). */
	if (f->session)
		out[SELF_INSN] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 0x7fffffff,
							      1, 2);
}

/* ioctl requests a snippet may make: isatty(), terminal size, and the fd flags CPython
 * sets through ioctl. Everything else (TIOCSTI above all) is denied. */
static const unsigned long ioctl_allowed[] = {
	TCGETS, TIOCGWINSZ, FIONREAD, FIOCLEX, FIONCLEX, FIONBIO,
};

/* Namespace flags a thread must not carry (CLONE_NEWTIME shares its bit with CSIGNAL). */
#define CLONE_NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
			CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* Syscalls that are allowed only through the argument-checked rules below: naming one in
 * "seccomp.allow" would lift the check, so that is an error. */
static const char *const arg_checked[] = {
	"clone", "ioctl", "kill", "prlimit64", "rt_sigaction", "tgkill", NULL,
};

static uint32_t deny_action(enum ps_seccomp_action a, int errno_val)
{
	switch (a) {
	case PS_SECCOMP_KILL:
		return SCMP_ACT_TRAP;
	case PS_SECCOMP_KILL_PROCESS:
		return SCMP_ACT_KILL_PROCESS;
	case PS_SECCOMP_ERRNO:
		return SCMP_ACT_ERRNO((uint32_t)errno_val);
	}
	return SCMP_ACT_KILL_PROCESS;
}

static int add_rule(scmp_filter_ctx ctx, uint32_t act, const char *name, unsigned n,
		    const struct scmp_arg_cmp *cmp, char *err, size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(name);
	int rc;

	if (nr == __NR_SCMP_ERROR) {
		snprintf(err, errlen, "seccomp: syscall '%s' is unknown on this architecture", name);
		return -1;
	}
	rc = seccomp_rule_add_array(ctx, act, nr, n, cmp);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp_rule_add(%s): %s", name, strerror(-rc));
		return -1;
	}
	return 0;
}

static int add_group(scmp_filter_ctx ctx, const struct ps_syscall_group *g, char *err,
		     size_t errlen)
{
	for (const char *const *s = g->syscalls; *s; s++)
		if (add_rule(ctx, SCMP_ACT_ALLOW, *s, 0, NULL, err, errlen) < 0)
			return -1;
	return 0;
}

static int add_groups(scmp_filter_ctx ctx, const struct ps_policy *p, char *err, size_t errlen)
{
	bool threads_listed = false;

	for (size_t i = 0; i < p->syscall_groups.n; i++) {
		const char *name = p->syscall_groups.items[i];
		const struct ps_syscall_group *g = ps_syscall_group_find(name);

		if (!g) {
			snprintf(err, errlen, "policy %s: field seccomp.groups: unknown syscall group '%s'",
				 p->path, name);
			return -1;
		}
		threads_listed |= strcmp(g->name, "@threads") == 0;
		if (add_group(ctx, g, err, errlen) < 0)
			return -1;
	}
	/* "threads": true needs the thread start-up calls whether or not the policy listed them. */
	if (p->threads && !threads_listed)
		return add_group(ctx, ps_syscall_group_find("@threads"), err, errlen);
	return 0;
}

static bool is_arg_checked(const char *name)
{
	for (const char *const *s = arg_checked; *s; s++)
		if (strcmp(*s, name) == 0)
			return true;
	return false;
}

static int add_extra(scmp_filter_ctx ctx, const struct ps_policy *p, char *err, size_t errlen)
{
	for (size_t i = 0; i < p->syscalls_allow.n; i++) {
		const char *name = p->syscalls_allow.items[i];
		const char *why = NULL;

		if (ps_syscall_never_allowed(name))
			why = "can never be allowed";
		else if (is_arg_checked(name))
			why = "is allowed only with pysnip's own argument checks";
		else if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR)
			why = "is not a syscall on x86-64";
		if (why) {
			snprintf(err, errlen, "policy %s: field seccomp.allow: syscall '%s' %s", p->path,
				 name, why);
			return -1;
		}
		if (add_rule(ctx, SCMP_ACT_ALLOW, name, 0, NULL, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* The rules that look at arguments. Each says why the rest of that syscall is denied. */
/* A session holder (DESIGN.md section 6) forks a child for each cell and reaps it: clone
 * without CLONE_THREAD is allowed, never with a namespace flag, and wait4 (and
 * set_robust_list, which glibc's fork() makes in the child). Bounded by
 * RLIMIT_NPROC on the session's uid, its PID namespace and the session host's kill of
 * everything at the end (SECURITY.md). Only in filters built by ps_filter_build_session. */
static int add_session_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	struct scmp_arg_cmp c[1];

	c[0] = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, 0);
	if (add_rule(ctx, SCMP_ACT_ALLOW, "clone", 1, c, err, errlen) < 0)
		return -1;
	/* glibc's fork() registers the child's robust futex list */
	if (add_rule(ctx, SCMP_ACT_ALLOW, "set_robust_list", 0, NULL, err, errlen) < 0)
		return -1;
	return add_rule(ctx, SCMP_ACT_ALLOW, "wait4", 0, NULL, err, errlen);
}

static int add_arg_rules(scmp_filter_ctx ctx, const struct ps_policy *p, uint32_t deny,
			 bool session, char *err, size_t errlen)
{
	struct scmp_arg_cmp c[2];

	for (size_t i = 0; i < sizeof(ioctl_allowed) / sizeof(ioctl_allowed[0]); i++) {
		c[0] = SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)ioctl_allowed[i]);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, c, err, errlen) < 0)
			return -1;
	}
	/* Nobody may replace or remove our SIGSYS handler; looking at it is fine. */
	c[0] = SCMP_A0_32(SCMP_CMP_NE, SIGSYS);
	if (add_rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, c, err, errlen) < 0)
		return -1;
	c[0] = SCMP_A0_32(SCMP_CMP_EQ, SIGSYS);
	c[1] = SCMP_A1_64(SCMP_CMP_EQ, 0);
	if (add_rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 2, c, err, errlen) < 0)
		return -1;
	/* Our own limits only (pid 0); raising a hard limit needs a capability we dropped. */
	c[0] = SCMP_A0_32(SCMP_CMP_EQ, 0);
	if (add_rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, c, err, errlen) < 0)
		return -1;
	/* Allowed here, narrowed to the worker itself by the program's prefix (write_prefix). */
	if (add_rule(ctx, SCMP_ACT_ALLOW, "kill", 0, NULL, err, errlen) < 0 ||
	    add_rule(ctx, SCMP_ACT_ALLOW, "tgkill", 0, NULL, err, errlen) < 0)
		return -1;
	/* Threads, never processes: CLONE_THREAD set and no namespace flag. */
	if (p->threads) {
		c[0] = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, CLONE_THREAD);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "clone", 1, c, err, errlen) < 0)
			return -1;
	}
	if (session && add_session_rules(ctx, err, errlen) < 0)
		return -1;
	/* clone3 passes its flags in memory the filter can't read: fail it with ENOSYS so that
	 * glibc falls back to clone, whose flags the rule above can check. */
	if (deny != SCMP_ACT_ERRNO(ENOSYS) &&
	    add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err, errlen) < 0)
		return -1;
	return 0;
}

/* libseccomp 2.5.4 can only export to a descriptor: go through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct ps_filter *f, char *err, size_t errlen)
{
	int fd = memfd_create("pysnip-seccomp", MFD_CLOEXEC);
	off_t size;
	int rc = -1;

	if (fd < 0) {
		snprintf(err, errlen, "memfd_create(pysnip-seccomp): %s", strerror(errno));
		return -1;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp_export_bpf(): %s", strerror(-rc));
		goto out;
	}
	rc = -1;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) ||
	    size / 8 + PREFIX_LEN > BPF_MAXINSNS) {
		snprintf(err, errlen, "seccomp_export_bpf(): unexpected program size %lld",
			 (long long)size);
		goto out;
	}
	f->insns = malloc((size_t)size + PREFIX_LEN * sizeof(struct sock_filter));
	if (!f->insns || pread(fd, f->insns + PREFIX_LEN, (size_t)size, 0) != size) {
		snprintf(err, errlen, "reading the exported seccomp program: %s", strerror(errno));
		goto out;
	}
	write_prefix(f, f->insns);
	f->len = (unsigned short)(PREFIX_LEN + size / sizeof(struct sock_filter));
	rc = 0;
out:
	close(fd);
	return rc;
}

static int build(const struct ps_policy *p, bool session, struct ps_filter **out, char *err,
		 size_t errlen)
{
	struct ps_filter *f = calloc(1, sizeof(*f));
	uint32_t deny = deny_action(p->seccomp_action, p->seccomp_errno);
	scmp_filter_ctx ctx = NULL;
	int rc = -1;

	*out = NULL;
	if (!f) {
		snprintf(err, errlen, "seccomp: out of memory");
		return -1;
	}
	f->action = p->seccomp_action;
	f->errno_val = p->seccomp_errno;
	f->session = session;
	ctx = seccomp_init(deny);
	if (!ctx) {
		snprintf(err, errlen, "seccomp_init(): failed");
		goto out;
	}
	/* Other architectures (int 0x80, i386) and x32 (nr >= 0x40000000): denied like any
	 * other syscall, so the verdict can still name them. We set no_new_privs ourselves. */
	/* A binary tree of syscall numbers rather than a chain: every syscall, and the kernel's
	 * per-syscall cache it computes when the filter is attached, walks O(log n) of it. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0) {
		snprintf(err, errlen, "seccomp_attr_set(): failed");
		goto out;
	}
	if (add_groups(ctx, p, err, errlen) < 0 || add_extra(ctx, p, err, errlen) < 0 ||
	    add_arg_rules(ctx, p, deny, session, err, errlen) < 0 || export_bpf(ctx, f, err, errlen) < 0)
		goto out;
	*out = f;
	f = NULL;
	rc = 0;
out:
	if (ctx)
		seccomp_release(ctx);
	ps_filter_free(f);
	return rc;
}

int ps_filter_build(const struct ps_policy *p, struct ps_filter **out, char *err, size_t errlen)
{
	return build(p, false, out, err, errlen);
}

int ps_filter_build_session(const struct ps_policy *p, struct ps_filter **out, char *err,
			    size_t errlen)
{
	return build(p, true, out, err, errlen);
}

void ps_filter_free(struct ps_filter *f)
{
	if (!f)
		return;
	free(f->insns);
	free(f);
}

/* One-shot runs fork the worker before the filter is built (its interpreter start then hides
 * the build): the parent sends the program down a pipe, the worker takes it into static
 * storage just before loading it. */
struct filter_wire {
	uint32_t len;
	int32_t action;
	int32_t errno_val;
};

int ps_filter_send(const struct ps_filter *f, int fd)
{
	struct filter_wire h = { f->len, (int32_t)f->action, f->errno_val };
	int rc = ps_write_all(fd, &h, sizeof(h));

	return rc < 0 ? rc : ps_write_all(fd, f->insns, (size_t)f->len * sizeof(*f->insns));
}

int ps_filter_receive(int fd, const struct ps_filter **out, struct ps_child_err *e)
{
	static struct sock_filter insns[BPF_MAXINSNS];
	static struct ps_filter rx;
	struct filter_wire h;
	int rc = ps_read_exact(fd, &h, sizeof(h));

	if (rc == 0 && (h.len == 0 || h.len > BPF_MAXINSNS))
		rc = -EPROTO;
	if (rc == 0)
		rc = ps_read_exact(fd, insns, (size_t)h.len * sizeof(*insns));
	if (rc < 0) {
		ps_child_err_set(e, -rc, "read(filter pipe): %s", ps_errstr(-rc));
		return -1;
	}
	rx.insns = insns;
	rx.len = (unsigned short)h.len;
	rx.action = (enum ps_seccomp_action)h.action;
	rx.errno_val = h.errno_val;
	*out = &rx;
	return 0;
}

const char *ps_syscall_name_arch(int nr, uint32_t arch)
{
	static __thread char buf[48];
	uint32_t scmp_arch = arch ? arch : SCMP_ARCH_X86_64;
	char *name;

	if (scmp_arch == SCMP_ARCH_X86_64 && nr >= 0x40000000)
		scmp_arch = SCMP_ARCH_X32;
	name = seccomp_syscall_resolve_num_arch(scmp_arch, nr);
	if (name) {
		snprintf(buf, sizeof(buf), "%s", name);
		free(name);
	} else {
		snprintf(buf, sizeof(buf), "syscall %d", nr);
	}
	if (scmp_arch != SCMP_ARCH_X86_64) {
		size_t n = strlen(buf);

		snprintf(buf + n, sizeof(buf) - n, scmp_arch == SCMP_ARCH_X32 ? " (x32)" : " (arch 0x%x)",
			 scmp_arch);
	}
	return buf;
}

const char *ps_syscall_name(int nr)
{
	return ps_syscall_name_arch(nr, SCMP_ARCH_X86_64);
}

/* ---- child side: no allocation, no stdio from here on ---- */

static int sigsys_status_fd = -1;

/* A syscall the filter denies. Report it, then die by the filter: the trapped reboot()
 * below happens while SIGSYS is blocked (we are in its handler), so the kernel resets
 * SIGSYS to its default and kills us with it (a forced signal: nothing the snippet set up,
 * not even a PID-namespace init's immunity, can ignore it). */
static void sigsys_handler(int sig, siginfo_t *si, void *uctx)
{
	struct ps_status_rec rec;

	(void)sig;
	(void)uctx;
	__builtin_memset(&rec, 0, sizeof(rec));
	rec.kind = PS_REC_SYSCALL;
	rec.phase = -1;
	rec.syscall_nr = si->si_syscall;
	rec.arch = si->si_arch;
	if (sigsys_status_fd >= 0)
		(void)ps_write_all(sigsys_status_fd, &rec, sizeof(rec));
	syscall(__NR_reboot, 0, 0, 0, 0);
	syscall(__NR_exit_group, 159);
}

static int load(struct sock_filter *insns, unsigned short len, struct ps_child_err *e)
{
	struct sock_fprog prog = { .len = len, .filter = insns };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
		ps_child_err_set(e, errno, "prctl(PR_SET_SECCOMP, allowlist): %s", ps_errstr(errno));
		return -1;
	}
	return 0;
}

int ps_filter_load(const struct ps_filter *f, int status_fd, struct ps_held *held,
		   struct ps_child_err *e)
{
	if (f->action == PS_SECCOMP_KILL) {
		struct sigaction sa;

		__builtin_memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = sigsys_handler;
		sa.sa_flags = SA_SIGINFO;
		sigfillset(&sa.sa_mask);
		sigsys_status_fd = status_fd;
		if (sigaction(SIGSYS, &sa, NULL) < 0) {
			ps_child_err_set(e, errno, "sigaction(SIGSYS): %s", ps_errstr(errno));
			return -1;
		}
	}
	/* Our own copy of the program (copy-on-write from the parent, or received): its prefix
	 * gets our pid (write_prefix). */
	if (!f->session)
		f->insns[SELF_INSN].k = (uint32_t)getpid();
	if (load(f->insns, f->len, e) < 0)
		return -1;
	held->seccomp = (uint8_t)(1 + f->action);
	return 0;
}
