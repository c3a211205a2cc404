/* Another process's state as the kernel shows it in /proc/PID/stat, for the parent side of a
 * run: the front checks that a spare is alive and not stopped before handing it a request, and
 * that a worker which said it is exiting really is (supervise.c). */
#ifndef PS_PROCSTAT_H
#define PS_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ps_procstat {
	char state;		/* R, S, D, T, t, Z, X, ... */
	unsigned long flags;	/* the task's PF_* flags */
	long threads;		/* threads not yet released */
	bool details;		/* the kernel shows us its memory layout and exit code */
	int exit_code;		/* what its do_exit() was given (wait4's status), if details */
};

/* Open /proc/PID/stat, then check through pidfd that the process had not exited by then: the
 * descriptor holds the process's struct pid, so it never shows another process, even once the
 * pid is reaped and reused. The fd, or -errno (-ESRCH: already gone). */
int ps_procstat_open(pid_t pid, int pidfd);
/* 0, or -errno (-ESRCH once the process is reaped). */
int ps_procstat_read(int fd, struct ps_procstat *st);

/* The process left user space for good by its own exit (exit_group), not by a signal: every
 * thread gone but the one in do_exit. Nothing of it can run again, so no kernel death (a
 * seccomp kill, RLIMIT_CPU's SIGKILL) can follow. */
bool ps_procstat_exiting_by_itself(const struct ps_procstat *st);
/* The same for a process that may have had other threads: the one left is still inside its
 * do_exit() (not a zombie yet) and that exit is with exit_code, the status wait4 will give.
 * A leader that left by exit() while another thread lived is a zombie once that thread is
 * gone, whatever killed it; a group exit a signal started first passes its number on (the
 * leader's exit_group() then exits with it, PF_SIGNALED not set). Needs details from the
 * read, or exit_code shows 0. */
bool ps_procstat_exiting_alone(const struct ps_procstat *st, int exit_code);
/* Dying of a signal (a fatal one was taken: its do_exit follows). */
bool ps_procstat_signaled(const struct ps_procstat *st);
/* Dead or stopped (SIGSTOP, ptrace): no use for a run. */
bool ps_procstat_unusable(const struct ps_procstat *st);

/* The clock RLIMIT_CPU counts for a process (its user + system time as the scheduler tick
 * samples it: CPUCLOCK_PROF), which may run ahead of wait4's rusage (the precise runtime) by
 * 10% or more on a busy machine. Read after the exit, before the reap. 0 or -errno. */
int ps_proc_cpu_clock_us(pid_t pid, uint64_t *us);

/* Child side: overwrite in place the strings the kernel copied onto our stack at exec: the
 * environment, and with argv the arguments. clearenv() only drops the pointers; native code
 * could still find the strings (a token, a path) by scanning up from __libc_stack_end. The
 * areas are the kernel's own record (/proc/self/stat, fields 48-51), so a setenv() that moved
 * environ elsewhere changes nothing. 0 or -errno. */
int ps_procstat_scrub_self(bool argv);

#endif
