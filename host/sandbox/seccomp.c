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
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "policy/seccomp_profile.h"
#include "sandbox.h"
#include "syscall_groups.h"
#include "util/util.h"

/* si_code of a seccomp trap's SIGSYS (asm-generic/siginfo.h, which clashes with glibc's). */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

struct ps_filter {
	struct sock_filter *insns;
	unsigned short len;
	enum ps_seccomp_action action;
	int errno_val;
	uint8_t trap;		/* some rule traps: the SIGSYS handler is needed (profiles) */
	uint8_t learn;		/* pysnip learn: unlisted syscalls notify (notify.c) */
	uint32_t load_flags;	/* SECCOMP_FILTER_FLAG_* (a profile's "flags") */
	uint8_t session;	/* a session holder's: fork allowed, signals within the session */
	uint8_t idle_exit;	/* the worker may make itself SCHED_IDLE (ps_filter_idle_exit) */
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
enum { SELF_INSN = 4, PREFIX_LEN = 7, SESSION_PREFIX_LEN = 12, MAX_PREFIX_LEN = SESSION_PREFIX_LEN };

static unsigned prefix_len(const struct ps_filter *f)
{
	return f->session ? SESSION_PREFIX_LEN : PREFIX_LEN;
}

static void write_prefix(const struct ps_filter *f, struct sock_filter *out)
{
	const uint32_t deny = f->learn ? SECCOMP_RET_ERRNO | EPERM : ret_action(f);
	const struct sock_filter prefix[PREFIX_LEN] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
		/* The kernel reads a pid_t: the low 32 bits of the argument (little endian). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0 /* SELF_INSN: our pid */, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		/* learn: a signal to someone else fails, and is not learned (never granted) */
		BPF_STMT(BPF_RET | BPF_K, deny),
	};
	/* A session's cells are forks of its holder: no pid is known when the filter loads.
	 * Any positive pid or our group (0) passes to the allowlist, never a negative one
	 * (-1: every process we may signal; -pgid: another group). Which processes a positive
	 * pid reaches is bounded by the session's uid and PID namespace (SECURITY.md); but
	 * the kernel lets SIGCONT reach any member of our kernel session whatever its uid, and
	 * a zygote's holder shares the server's (host/run/worker.c): SIGCONT goes only to our
	 * own group (0). */
	const struct sock_filter session[SESSION_PREFIX_LEN] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_STMT(BPF_JMP | BPF_JA | BPF_K, 2),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		/* the signal: SIGCONT only to 0, any other to a positive pid or 0 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGCONT, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 0x7fffffff, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, deny),
	};

	if (f->session)
		memcpy(out, session, sizeof(session));
	else
		memcpy(out, prefix, sizeof(prefix));
}

/* ioctl requests a snippet may make: isatty(), terminal size, and the fd flags CPython
 * sets through ioctl. Everything else (TIOCSTI above all) is denied. */
static const unsigned long ioctl_allowed[] = {
	TCGETS, TIOCGWINSZ, FIONREAD, FIOCLEX, FIONCLEX, FIONBIO,
};

/* fcntl commands a snippet may use: descriptor flags, duplication, record locks, pipe size,
 * seals. Not F_SETOWN, F_SETOWN_EX or F_SETSIG: with O_ASYNC they make the kernel send any
 * signal (SIGKILL included) to any pid, checked only against the uid, not against Landlock
 * before ABI 6 nor the prefix's self-only rule; every worker of a zygote shares a PID
 * namespace and a uid. Nor leases and dnotify (F_SETLEASE, F_NOTIFY), which signal too and
 * can hold up the host's own opens. */
static const unsigned fcntl_allowed[] = {
	F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW, F_GETOWN,
	F_GETSIG, F_GETOWN_EX, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_DUPFD_CLOEXEC,
	F_SETPIPE_SZ, F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS,
};

/* Namespace flags a thread must not carry (CLONE_NEWTIME shares its bit with CSIGNAL). */
#define CLONE_NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
			CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* Syscalls that are allowed only through the argument-checked rules below: naming one in
 * "seccomp.allow" would lift the check, so that is an error; a profile's allow of one is
 * narrowed to the check (the reason is what check-policy says). */
static const char *const arg_checked[] = {
	"clone", "fcntl", "ioctl", "kill", "prlimit64", "rt_sigaction", "sched_setscheduler",
	"tgkill", NULL,
};
static const char *const arg_checked_why[] = {
	"narrowed to threads (CLONE_THREAD, no namespace flag), only with seccomp.threads",
	("narrowed to descriptor flags, duplication, locks, pipe size and seals (never F_SETOWN, "
	 "F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY)"),
	"narrowed to TCGETS, TIOCGWINSZ, FIONREAD, FIOCLEX, FIONCLEX, FIONBIO",
	"narrowed to the worker itself", "narrowed to the worker's own limits",
	"narrowed to handlers other than SIGSYS's",
	"narrowed to the worker itself becoming SCHED_IDLE (what it does as it exits)",
	"narrowed to the worker itself",
};
enum { ARG_CLONE, ARG_FCNTL, ARG_IOCTL, ARG_KILL, ARG_PRLIMIT, ARG_SIGACTION, ARG_SCHED,
       ARG_TGKILL, ARG_COUNT };
#define ARG_ALL ((1u << ARG_COUNT) - 1)
/* One name, one reason and one bit each, in the same order (a merge once left them apart). */
_Static_assert(PS_ARRAY_LEN(arg_checked) == ARG_COUNT + 1, "arg_checked and ARG_*");
_Static_assert(PS_ARRAY_LEN(arg_checked_why) == ARG_COUNT, "arg_checked_why and ARG_*");

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
	uint32_t act = g->fail_errno ? SCMP_ACT_ERRNO((uint32_t)g->fail_errno) : SCMP_ACT_ALLOW;

	for (const char *const *s = g->syscalls; *s; s++)
		if (add_rule(ctx, act, *s, 0, NULL, err, errlen) < 0)
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
	/* "threads": true needs the thread start-up calls whether or not the policy listed them
	 * (a profile decides for itself). */
	if (p->threads && !threads_listed && !p->seccomp_profile)
		return add_group(ctx, ps_syscall_group_find("@threads"), err, errlen);
	return 0;
}

static int arg_checked_index(const char *name)
{
	for (int i = 0; arg_checked[i]; i++)
		if (strcmp(arg_checked[i], name) == 0)
			return i;
	return -1;
}

static bool is_arg_checked(const char *name)
{
	return arg_checked_index(name) >= 0;
}

bool ps_filter_is_arg_checked(const char *name)
{
	return is_arg_checked(name);
}

bool ps_filter_idle_exit(const struct ps_filter *f)
{
	return !f || f->idle_exit;
}

bool ps_filter_learns(const struct ps_filter *f)
{
	return f && f->learn == PS_LEARN_NOTIFY;
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

/* The rules that look at arguments. Each says why the rest of that syscall is denied. Only
 * the syscalls in mask (1 << ARG_*) get theirs: a profile that does not allow one keeps it
 * denied. clone3 fails with ENOSYS unless keep_clone3 (a profile denied it its own way). */
static int add_arg_rules(scmp_filter_ctx ctx, const struct ps_policy *p, uint32_t deny,
			 unsigned mask, bool keep_clone3, bool session, char *err, size_t errlen)
{
	struct scmp_arg_cmp c[2];

	for (size_t i = 0; (mask & (1u << ARG_IOCTL)) && i < PS_ARRAY_LEN(ioctl_allowed); i++) {
		c[0] = SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)ioctl_allowed[i]);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, c, err, errlen) < 0)
			return -1;
	}
	for (size_t i = 0; (mask & (1u << ARG_FCNTL)) && i < PS_ARRAY_LEN(fcntl_allowed); i++) {
		c[0] = SCMP_A1_32(SCMP_CMP_EQ, fcntl_allowed[i]);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "fcntl", 1, c, err, errlen) < 0)
			return -1;
	}
	/* Nobody may replace or remove our SIGSYS handler; looking at it is fine. */
	if (mask & (1u << ARG_SIGACTION)) {
		c[0] = SCMP_A0_32(SCMP_CMP_NE, SIGSYS);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, c, err, errlen) < 0)
			return -1;
		c[0] = SCMP_A0_32(SCMP_CMP_EQ, SIGSYS);
		c[1] = SCMP_A1_64(SCMP_CMP_EQ, 0);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 2, c, err, errlen) < 0)
			return -1;
	}
	/* Our own limits only (pid 0); raising a hard limit needs a capability we dropped. */
	c[0] = SCMP_A0_32(SCMP_CMP_EQ, 0);
	if ((mask & (1u << ARG_PRLIMIT)) &&
	    add_rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, c, err, errlen) < 0)
		return -1;
	/* The worker's own step down to SCHED_IDLE once its report is out (worker.c,
	 * child_report_exit): lower, never higher, and only itself. */
	c[0] = SCMP_A0_32(SCMP_CMP_EQ, 0);
	c[1] = SCMP_A1_32(SCMP_CMP_EQ, SCHED_IDLE);
	if ((mask & (1u << ARG_SCHED)) && deny != SCMP_ACT_ALLOW &&
	    add_rule(ctx, SCMP_ACT_ALLOW, "sched_setscheduler", 2, c, err, errlen) < 0)
		return -1;
	/* Allowed here, narrowed to the worker itself by the program's prefix (write_prefix). */
	if (((mask & (1u << ARG_KILL)) && add_rule(ctx, SCMP_ACT_ALLOW, "kill", 0, NULL, err,
						   errlen) < 0) ||
	    ((mask & (1u << ARG_TGKILL)) && add_rule(ctx, SCMP_ACT_ALLOW, "tgkill", 0, NULL, err,
						     errlen) < 0))
		return -1;
	/* Threads, never processes: CLONE_THREAD set and no namespace flag. */
	if (p->threads && (mask & (1u << ARG_CLONE))) {
		c[0] = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, CLONE_THREAD);
		if (add_rule(ctx, SCMP_ACT_ALLOW, "clone", 1, c, err, errlen) < 0)
			return -1;
	}
	/* @exec-probe: a process (clone without CLONE_THREAD, _posixsubprocess's fallback when
	 * vfork fails) fails with EPERM too, so that the library's OSError path runs. */
	if (!session && ps_strlist_has(&p->syscall_groups, "@exec-probe")) {
		c[0] = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, c, err, errlen) < 0)
			return -1;
	}
	if (session && add_session_rules(ctx, err, errlen) < 0)
		return -1;
	/* clone3 passes its flags in memory the filter can't read: fail it with ENOSYS so that
	 * glibc falls back to clone, whose flags the rule above can check. */
	if (!keep_clone3 && deny != SCMP_ACT_ERRNO(ENOSYS) &&
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
	    size / 8 + MAX_PREFIX_LEN > BPF_MAXINSNS) {
		snprintf(err, errlen, "seccomp_export_bpf(): unexpected program size %lld",
			 (long long)size);
		goto out;
	}
	f->insns = malloc((size_t)size + prefix_len(f) * sizeof(struct sock_filter));
	if (!f->insns || pread(fd, f->insns + prefix_len(f), (size_t)size, 0) != size) {
		snprintf(err, errlen, "reading the exported seccomp program: %s", strerror(errno));
		goto out;
	}
	write_prefix(f, f->insns);
	f->len = (unsigned short)(prefix_len(f) + size / sizeof(struct sock_filter));
	rc = 0;
out:
	close(fd);
	return rc;
}

/* ---- Docker/OCI profiles: their rules first, pysnip's floor after ----
 *
 * The profile's default action is the filter's (pysnip takes only default-deny profiles).
 * Its rules are added as runc adds them, except where the floor says otherwise:
 *  - a syscall pysnip never allows (ps_syscalls_never) keeps a deny the profile gives it;
 *    if the profile allows it, the policy's own action (seccomp.action) denies it;
 *  - an argument-checked syscall the profile allows gets pysnip's check instead;
 *  - other ABIs and x32 are denied whatever "architectures" or "archMap" ask for.
 * SCMP_ACT_KILL (which libseccomp and the kernel apply to a thread) kills the process here:
 * it traps to pysnip's SIGSYS handler, which names the syscall and dies by it. */
struct prof_build {
	const struct ps_policy *p;
	scmp_filter_ctx ctx;
	uint32_t def, floor, kill;
	unsigned arg_allowed;			/* 1 << ARG_*: the profile allows it */
	unsigned arg_denied;			/* 1 << ARG_*: the profile denies it */
	bool write_allowed;			/* write(2) allowed whatever its arguments */
	bool never_denied[128];			/* by index into ps_syscalls_never */
	struct ps_filter_report *rep;
	char *err;
	size_t errlen;
};

static uint32_t prof_action(const struct prof_build *b, enum ps_prof_action a, int e)
{
	switch (a) {
	case PS_PACT_ALLOW:
		return SCMP_ACT_ALLOW;
	case PS_PACT_LOG:
		return SCMP_ACT_LOG;
	case PS_PACT_ERRNO:
		return SCMP_ACT_ERRNO((uint32_t)e);
	case PS_PACT_TRACE:	/* no tracer is ever attached: what the kernel does then */
		return SCMP_ACT_ERRNO(ENOSYS);
	case PS_PACT_KILL:
		break;
	}
	return b->kill;
}

static int never_index(const char *name)
{
	for (int i = 0; ps_syscalls_never[i]; i++)
		if (!strcmp(ps_syscalls_never[i], name))
			return i;
	return -1;
}

/* "ptrace (syscalls[3]): never allowed by pysnip", once per name and reason. */
static int report(struct prof_build *b, struct ps_strlist *l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int report(struct prof_build *b, struct ps_strlist *l, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!b->rep)
		return 0;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ps_strlist_has(l, line) || ps_strlist_push(l, line) == 0)
		return 0;
	snprintf(b->err, b->errlen, "seccomp: out of memory");
	return -1;
}

/* runc's way: one rule with every comparison when each argument appears once; else one rule
 * per comparison (libseccomp cannot AND two comparisons of one argument). */
static int prof_add(struct prof_build *b, const struct ps_prof_rule *r, int nr, uint32_t act,
		    const char *name)
{
	struct scmp_arg_cmp c[6];
	unsigned seen = 0;
	bool split = r->nargs > 6;
	int rc = 0;

	if (act == b->def)	/* what the default does anyway (libseccomp refuses it) */
		return 0;
	for (size_t i = 0; i < r->nargs && !split; i++) {
		split = seen & (1u << r->args[i].index);
		seen |= 1u << r->args[i].index;
		c[i] = SCMP_CMP(r->args[i].index, (enum scmp_compare)r->args[i].op, r->args[i].value,
				r->args[i].value_two);
	}
	if (!split)
		rc = seccomp_rule_add_array(b->ctx, act, nr, (unsigned)r->nargs, c);
	for (size_t i = 0; split && i < r->nargs && rc == 0; i++) {
		c[0] = SCMP_CMP(r->args[i].index, (enum scmp_compare)r->args[i].op, r->args[i].value,
				r->args[i].value_two);
		rc = seccomp_rule_add_array(b->ctx, act, nr, 1, c);
	}
	if (rc < 0) {
		snprintf(b->err, b->errlen, "profile %s: %s: syscall '%s': %s",
			 b->p->seccomp_profile->path, r->where, name,
			 rc == -EEXIST || rc == -EACCES
				 ? "conflicts with an earlier rule for it"
				 : strerror(-rc));
		return -1;
	}
	return 0;
}

static int prof_rule_name(struct prof_build *b, const struct ps_prof_rule *r, const char *name)
{
	uint32_t act = prof_action(b, r->action, r->errno_val);
	bool allows = act == SCMP_ACT_ALLOW || act == SCMP_ACT_LOG;
	int nr = seccomp_syscall_resolve_name(name);
	int never = never_index(name), checked = arg_checked_index(name);

	if (nr == __NR_SCMP_ERROR)
		return b->rep ? report(b, &b->rep->unknown, "%s", name) : 0;
	if (nr < 0)	/* a syscall of other architectures only: libseccomp would skip it */
		return b->rep ? report(b, &b->rep->foreign, "%s", name) : 0;
	if (never >= 0 && allows)
		return b->rep ? report(b, &b->rep->overridden, "%s (%s): never allowed by pysnip",
				       name, r->where) : 0;
	if (never >= 0) {
		b->never_denied[never] = true;
		/* The SIGSYS handler dies through a trapped reboot: the floor keeps it. */
		if (!strcmp(name, "reboot"))
			return 0;
	}
	if (!strcmp(name, "write") && allows && !r->nargs)
		b->write_allowed = true;
	if (checked >= 0 && !allows)
		b->arg_denied |= 1u << checked;
	if (checked >= 0 && allows) {
		b->arg_allowed |= 1u << checked;
		return b->rep ? report(b, &b->rep->overridden, "%s (%s): %s", name, r->where,
				       arg_checked_why[checked]) : 0;
	}
	return prof_add(b, r, nr, act, name);
}

static int prof_rules(struct prof_build *b)
{
	const struct ps_seccomp_profile *prof = b->p->seccomp_profile;

	for (size_t i = 0; i < prof->nrules; i++)
		for (size_t k = 0; k < prof->rules[i].names.n; k++)
			if (prof_rule_name(b, &prof->rules[i], prof->rules[i].names.items[k]) < 0)
				return -1;
	for (size_t i = 0; b->rep && i < prof->arches.n; i++) {
		const char *a = prof->arches.items[i];

		if (strcmp(a, "SCMP_ARCH_X86_64") && strcmp(a, "SCMP_ARCH_NATIVE") &&
		    report(b, &b->rep->overridden, "architecture %s: not added (pysnip allows "
			   "only x86-64's own ABI)", a) < 0)
			return -1;
	}
	if (b->rep && (prof->flags & PS_PFLAG_SPEC_ALLOW) &&
	    report(b, &b->rep->overridden, "flag SECCOMP_FILTER_FLAG_SPEC_ALLOW: not applied "
		   "(the speculative-execution mitigation stays)") < 0)
		return -1;
	return 0;
}

/* Every never-allowed syscall the profile did not deny itself gets the policy's action. */
static int prof_floor(struct prof_build *b)
{
	for (int i = 0; ps_syscalls_never[i]; i++) {
		const char *name = ps_syscalls_never[i];
		uint32_t act = b->floor;

		if (b->never_denied[i] && strcmp(name, "reboot"))
			continue;
		if (!strcmp(name, "clone3"))	/* ENOSYS, so libc falls back to clone */
			continue;		/* (add_arg_rules) */
		if (!strcmp(name, "reboot") && b->kill == SCMP_ACT_TRAP)
			act = SCMP_ACT_TRAP;
		if (act != b->def && add_rule(b->ctx, act, name, 0, NULL, b->err, b->errlen) < 0)
			return -1;
	}
	return 0;
}

static bool prof_traps(const struct prof_build *b)
{
	const struct ps_seccomp_profile *prof = b->p->seccomp_profile;

	if (b->def == SCMP_ACT_TRAP || b->floor == SCMP_ACT_TRAP)
		return true;
	for (size_t i = 0; i < prof->nrules; i++)
		if (prof->rules[i].action == PS_PACT_KILL && b->kill == SCMP_ACT_TRAP)
			return true;
	return false;
}

static int build_rules(scmp_filter_ctx ctx, const struct ps_policy *p, struct ps_filter *f,
		       struct ps_filter_report *rep, uint32_t def, char *err, size_t errlen)
{
	struct prof_build b = { .p = p, .ctx = ctx, .def = def, .rep = rep, .err = err,
				.errlen = errlen };
	int clone3 = never_index("clone3");
	struct scmp_arg_cmp c[1];
	unsigned mask;

	if (!p->seccomp_profile) {
		f->idle_exit = 1;
		return add_groups(ctx, p, err, errlen) < 0 || add_extra(ctx, p, err, errlen) < 0 ||
		       add_arg_rules(ctx, p, def, ARG_ALL, false, f->session, err, errlen) < 0 ? -1 : 0;
	}
	b.floor = deny_action(p->seccomp_action, p->seccomp_errno);
	b.kill = p->seccomp_action == PS_SECCOMP_KILL_PROCESS ? SCMP_ACT_KILL_PROCESS
							       : SCMP_ACT_TRAP;
	f->trap = prof_traps(&b);
	if (prof_rules(&b) < 0)
		return -1;
	/* The worker's SCHED_IDLE exit unless the profile denies sched_setscheduler itself */
	mask = b.arg_allowed | (b.arg_denied & (1u << ARG_SCHED) ? 0 : 1u << ARG_SCHED);
	f->idle_exit = !(b.arg_denied & (1u << ARG_SCHED)) || def == SCMP_ACT_ALLOW;
	if (p->seccomp_profile->flags & PS_PFLAG_LOG)
		f->load_flags |= SECCOMP_FILTER_FLAG_LOG;
	/* The SIGSYS handler reports on the status pipe with write(2): under a profile that
	 * denies write, that one descriptor stays writable, or no denial could be named. */
	c[0] = SCMP_A0_32(SCMP_CMP_EQ, PS_SECCOMP_REPORT_FD);
	if ((f->trap && !b.write_allowed &&
	     add_rule(ctx, SCMP_ACT_ALLOW, "write", 1, c, err, errlen) < 0) ||
	    add_groups(ctx, p, err, errlen) < 0 || add_extra(ctx, p, err, errlen) < 0 ||
	    add_arg_rules(ctx, p, def, mask, b.never_denied[clone3], f->session, err,
			  errlen) < 0)
		return -1;
	return prof_floor(&b);
}

/* Learn mode: the worker hands its listener over with sendmsg on PS_LEARN_FD, then closes
 * that descriptor; nothing else may reach the supervisor's channel. */
static int add_learn_rules(scmp_filter_ctx ctx, const struct ps_policy *p, char *err,
			   size_t errlen)
{
	struct scmp_arg_cmp c[1] = { SCMP_A0_32(SCMP_CMP_EQ, PS_LEARN_FD) };

	if (ps_strlist_has(&p->syscalls_allow, "sendmsg"))
		return 0;
	return add_rule(ctx, SCMP_ACT_ALLOW, "sendmsg", 1, c, err, errlen);
}

/* Learn via SCMP_ACT_LOG: every native syscall the rules above do not name is allowed and
 * logged, except what pysnip never allows and the argument-checked ones, whose calls outside
 * the check fall to the default (EPERM): a call that notify mode would refuse fails here too.
 * libseccomp 2.5.4 keeps an unconditional rule a syscall already has (an allowed one stays
 * allowed, unlogged) but lets an unconditional rule replace conditional ones: that is why the
 * argument-checked syscalls get none here, and why a profile's argument filter is lifted
 * while learning this way (its other calls are logged, so learned, as in notify mode). */
static int add_log_rules(scmp_filter_ctx ctx, const struct ps_policy *p, char *err,
			 size_t errlen)
{
	struct scmp_arg_cmp c[1] = {
		SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, CLONE_THREAD)
	};

	/* A thread's clone is logged and goes on (threads can be learned); a process's fails. */
	if (!p->threads && add_rule(ctx, SCMP_ACT_LOG, "clone", 1, c, err, errlen) < 0)
		return -1;
	for (int nr = 0; nr < 1024; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		int rc = 0;

		if (name && !ps_syscall_never_allowed(name) && !is_arg_checked(name))
			rc = seccomp_rule_add_exact(ctx, SCMP_ACT_LOG, nr, 0);
		free(name);
		if (rc < 0 && rc != -EEXIST && rc != -EACCES) {
			snprintf(err, errlen, "seccomp_rule_add(LOG, %d): %s", nr, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static int build(const struct ps_policy *p, bool session, struct ps_filter **out,
		 struct ps_filter_report *rep, char *err, size_t errlen);

int ps_filter_build(const struct ps_policy *p, struct ps_filter **out, char *err, size_t errlen)
{
	return build(p, false, out, NULL, err, errlen);
}

int ps_filter_build_session(const struct ps_policy *p, struct ps_filter **out, char *err,
			    size_t errlen)
{
	return build(p, true, out, NULL, err, errlen);
}

int ps_filter_build_report(const struct ps_policy *p, struct ps_filter **out,
			   struct ps_filter_report *rep, char *err, size_t errlen)
{
	return build(p, false, out, rep, err, errlen);
}

static int build(const struct ps_policy *p, bool session, struct ps_filter **out,
		 struct ps_filter_report *rep, char *err, size_t errlen)
{
	struct ps_filter *f = calloc(1, sizeof(*f));
	uint32_t deny = deny_action(p->seccomp_action, p->seccomp_errno), def = deny;
	const struct ps_seccomp_profile *prof = p->seccomp_profile;
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
	if (prof) {
		struct prof_build b = { .p = p };

		b.kill = p->seccomp_action == PS_SECCOMP_KILL_PROCESS ? SCMP_ACT_KILL_PROCESS
								       : SCMP_ACT_TRAP;
		def = prof_action(&b, prof->default_action, prof->default_errno);
	}
	/* pysnip learn: what the policy does not allow goes to the supervisor (notify.c), or
	 * with SCMP_ACT_LOG the default fails and every other syscall is logged (add_log_rules) */
	if (p->seccomp_learn == PS_LEARN_NOTIFY)
		def = SCMP_ACT_NOTIFY;
	else if (p->seccomp_learn == PS_LEARN_LOG)
		def = SCMP_ACT_ERRNO(EPERM);
	/* the refused calls too: without the flag the kernel logs an errno action never */
	if (p->seccomp_learn == PS_LEARN_LOG)
		f->load_flags |= SECCOMP_FILTER_FLAG_LOG;
	f->learn = p->seccomp_learn;
	ctx = seccomp_init(def);
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
	if (build_rules(ctx, p, f, rep, def, err, errlen) < 0 ||
	    (f->learn == PS_LEARN_NOTIFY && add_learn_rules(ctx, p, err, errlen) < 0) ||
	    (f->learn == PS_LEARN_LOG && add_log_rules(ctx, p, err, errlen) < 0) ||
	    export_bpf(ctx, f, err, errlen) < 0)
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

void ps_filter_report_free(struct ps_filter_report *r)
{
	ps_strlist_free(&r->overridden);
	ps_strlist_free(&r->unknown);
	ps_strlist_free(&r->foreign);
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
	uint32_t trap;
	uint32_t load_flags;
	uint32_t learn;
	uint32_t session;
	uint32_t idle_exit;
};

int ps_filter_send(const struct ps_filter *f, int fd)
{
	struct filter_wire h = { f->len, (int32_t)f->action, f->errno_val, f->trap,
				 f->load_flags, f->learn, f->session, f->idle_exit };
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
	rx.trap = (uint8_t)h.trap;
	rx.load_flags = h.load_flags;
	rx.learn = (uint8_t)h.learn;
	rx.session = (uint8_t)h.session;
	rx.idle_exit = (uint8_t)h.idle_exit;
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
	/* Only the kernel's trap says SYS_SECCOMP: a SIGSYS the snippet sent itself (raise,
	 * kill or tgkill to its own pid, all allowed) says SI_TKILL or SI_USER, and forging
	 * the code needs rt_(tg)sigqueueinfo or pidfd_send_signal, which the filter never
	 * allows. Such a signal is no denial and must not end the run as one: ignore it. */
	if (si->si_code != SYS_SECCOMP)
		return;
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

/* Learn mode: the listener goes to the parent over PS_LEARN_FD, then both close. Until the
 * parent has it, a notified syscall waits (the wall clock runs). */
static int hand_over_listener(int lfd, struct ps_child_err *e)
{
	int ret = ps_send_fd(PS_LEARN_FD, lfd, 'L');

	close(lfd);
	close(PS_LEARN_FD);
	if (ret < 0) {
		ps_child_err_set(e, -ret, "sendmsg(learn channel, listener): %s", ps_errstr(-ret));
		return -1;
	}
	return 0;
}

static int load(struct sock_filter *insns, unsigned short len, uint32_t flags,
		struct ps_child_err *e)
{
	struct sock_fprog prog = { .len = len, .filter = insns };

	/* seccomp(2) only for the flags prctl cannot pass (a profile's SECCOMP_FILTER_FLAG_LOG,
	 * learn mode's listener). */
	if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) {
		long lfd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);

		if (lfd < 0) {
			ps_child_err_set(e, errno, "seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER): %s",
					 ps_errstr(errno));
			return -1;
		}
		return hand_over_listener((int)lfd, e);
	}
	if (flags && syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) < 0) {
		ps_child_err_set(e, errno, "seccomp(SECCOMP_SET_MODE_FILTER, 0x%x): %s", flags,
				 ps_errstr(errno));
		return -1;
	}
	if (!flags && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
		ps_child_err_set(e, errno, "prctl(PR_SET_SECCOMP, allowlist): %s", ps_errstr(errno));
		return -1;
	}
	return 0;
}

int ps_filter_load(const struct ps_filter *f, int status_fd, struct ps_held *held,
		   struct ps_child_err *e)
{
	struct sigaction sa;

	/* A death by SIGSYS must mean the filter's. Trap: our handler, which ignores any SIGSYS
	 * but the kernel's. Kill-process: the kernel kills without a signal handler, and errno
	 * never kills: a SIGSYS the snippet sends itself is ignored. The filter denies changing
	 * this (rt_sigaction on SIGSYS may only read). A profile's SCMP_ACT_TRAP rules (f->trap)
	 * need the handler as the kill action does. */
	__builtin_memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (f->action == PS_SECCOMP_KILL || f->trap) {
		sa.sa_sigaction = sigsys_handler;
		sa.sa_flags = SA_SIGINFO;
		sigfillset(&sa.sa_mask);
		sigsys_status_fd = status_fd;
	}
	if (sigaction(SIGSYS, &sa, NULL) < 0) {
		ps_child_err_set(e, errno, "sigaction(SIGSYS): %s", ps_errstr(errno));
		return -1;
	}
	/* Our own copy of the program (copy-on-write from the parent, or received): its prefix
	 * gets our pid (write_prefix). */
	if (!f->session)
		f->insns[SELF_INSN].k = (uint32_t)getpid();
	if (load(f->insns, f->len,
		 f->load_flags | (f->learn == PS_LEARN_NOTIFY ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0),
		 e) < 0)
		return -1;
	held->seccomp = (uint8_t)(1 + f->action);
	return 0;
}
