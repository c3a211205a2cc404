/* One snippet's run: prepared in the parent, applied by a forked worker, watched by the
 * supervisor. The same code serves exec (one run) and a zygote (many). */
#ifndef PS_WORKER_H
#define PS_WORKER_H

#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "sandbox/cgroup.h"
#include "python/interp.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"

/* Everything about a policy that does not change per run, built once in the parent. */
struct ps_worker {
	const struct ps_policy *policy;
	uint32_t layers_off;		/* 1 << enum ps_layer: switched off by the caller or the policy */
	struct ps_filter *filter;	/* NULL when seccomp is off */
	struct ps_landlock *landlock;	/* NULL when landlock is off */
	uint32_t ns_static;		/* CLONE_NEW* entered by the parent, inherited by workers */
	uint32_t layers_degraded;	/* best-effort layers the parent could not set up */
	char tmp_base[200];		/* where per-run scratch directories are made */
	/* A zygote whose workers each mount a tmpfs of their own in a mount namespace of their
	 * own: one path serves as every run's scratch, so the zygote makes the directory and
	 * the run's snippet-independent start (ps_interp_begin_shared) once, not every worker.
	 * Empty: a directory per run (ps_worker_share_scratch). */
	char shared_scratch[256];
	bool cgroup;			/* a per-run cgroup under policy->cgroup_parent */
	/* One-shot runs: the worker initialises the interpreter itself, first thing after the
	 * fork, so a small parent forks and nothing is copied twice. NULL: the parent already
	 * holds an initialised interpreter (a zygote). */
	const struct ps_interp_opts *init_in_child;
	/* One-shot runs: the seccomp filter is built by the parent after the fork, while the
	 * worker starts its interpreter, and handed over a pipe (ps_worker_prepare_oneshot). */
	bool filter_deferred;
	/* > 0: workers forked ahead of demand do their phases at this nice value, out of the way
	 * of the runs; the zygote (root) puts a worker back to 0 when a request claims it. */
	int ahead_nice;
	/* A zygote's spare forked to rehearse (zygote.c): before its request it draws a figure
	 * and renders it as a run's display is, thrown away (ps_interp_rehearse_plot), so that a
	 * plot, and the numpy and Pillow work beside it, find their pages copied and the fonts
	 * loaded; it says PS_REC_READY then. Set around the spawn of such a spare only. */
	bool rehearse;
	/* pysnip learn (one-shot only): the filter notifies instead of denying, and this
	 * supervisor answers; the worker hands its listener over PS_LEARN_FD. */
	struct ps_notify *learn;
	/* A session holder (session/holder.c): after its last phase the worker runs this instead
	 * of a snippet, with the run's token; it never returns. Set by ps_worker_prepare_session,
	 * whose filter also allows fork. */
	void (*become)(const char *token);
};

/* One request. */
/* A file the run finds at input/NAME (NAME one path component): the caller's file at path
 * (exec --input: bind-mounted read-only, or copied where no mount namespace exists), or data
 * (a served request's bytes, written into the scratch). */
struct ps_file_in {
	const char *name;
	const char *path;
	const char *data;
	size_t len;
};

struct ps_run {
	const struct ps_file_in *inputs;
	size_t n_inputs;
	bool want_output;		/* make output/ even where the policy would not */
	bool files_content;		/* the verdict's files carry their bytes (HTTP) */
	const char *code;
	size_t code_len;
	const char *stdin_data;		/* NULL: empty stdin */
	size_t stdin_len;
	struct ps_limits limits;	/* the policy's, possibly tightened */
	unsigned slot;			/* worker slot, picks a uid from a policy's range */
};

struct ps_capture {
	char *buf;
	size_t len;
	bool truncated;
};

/* What the supervisor saw. Parsed into a verdict by result.c. */
struct ps_outcome {
	int wait_status;
	bool reaped;
	struct rusage ru;		/* the run's: a spare's CPU before its request taken off */
	int64_t ahead_cpu_us[2];	/* that CPU (user, system), from the HELD record */
	uint64_t wall_us;
	uint64_t setup_us;		/* fork to the snippet's first instruction (every phase) */
	uint64_t run_us;		/* the snippet's start to the worker's exit */
	bool timed_out;			/* killed at the wall-clock deadline */
	bool output_capped;		/* killed for exceeding the output cap */
	bool report_capped;		/* the report channel overflowed */
	struct ps_capture out, err, report;
	bool have_held;
	struct ps_held held;
	char scratch[200];		/* the run's scratch as the worker saw it (its HELD record) */
	bool phase_failed;
	char phase_name[32];
	int phase_err;
	char phase_msg[200];
	bool have_syscall;
	int syscall_nr;
	uint32_t syscall_arch;
	char host_error[512];		/* the host's own failure, if any */
	char report_token[40];		/* the run's secret: a report counts only behind it */
	bool self_exit;			/* ended by the worker's own exit record (serve) */
	pid_t pid;			/* the worker's, as its parent saw it (learn's log mode) */
	bool cpu_clock_read;		/* cpu_clock_us below was read */
	uint64_t cpu_clock_us;		/* RLIMIT_CPU's clock at the exit (ps_proc_cpu_clock_us) */
	bool cgroup_used;		/* the run had its own cgroup: the two below are real */
	uint64_t cgroup_memory_peak;	/* bytes */
	uint64_t cgroup_oom_kills;
};

/* Zygote: switch to one scratch path for every run where each worker mounts its own tmpfs
 * over it (namespaces on, and the privilege to mount). 0, also when not switched; -1 with
 * err when the directory cannot be made. */
int ps_worker_share_scratch(struct ps_worker *w, char *err, size_t errlen);
/* Parent: build the filter, prepare Landlock, enter the unchanging namespaces. */
int ps_worker_prepare(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
		      char *err, size_t errlen);
void ps_worker_release(struct ps_worker *w);
/* One-shot runs: the same, except that the worker starts the interpreter itself (io) and
 * the seccomp filter is built after the fork, in parallel with that start, and handed over a
 * pipe. A policy error found then comes back from ps_worker_run as a host_error starting
 * "policy ". */
int ps_worker_prepare_oneshot(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
			      const struct ps_interp_opts *io, char *err, size_t errlen);

/* A session's holder: as ps_worker_prepare, with the session's seccomp filter
 * (ps_filter_build_session) and become run after the last phase. */
int ps_worker_prepare_session(struct ps_worker *w, const struct ps_policy *p, uint32_t layers_off,
			      void (*become)(const char *token), char *err, size_t errlen);

/* Parent: fork a worker for one run and supervise it to the end. 0, or -errno for a host
 * failure (then o->host_error says what). Nothing of the run survives the call. */
int ps_worker_run(const struct ps_worker *w, const struct ps_run *r, struct ps_outcome *o);
void ps_outcome_free(struct ps_outcome *o);
const char *ps_worker_phase_name(int i);

/* A worker forked ahead of demand (serve) reads this on fd 0 when its request comes, then
 * code_len bytes of code, then n_inputs files (each a struct ps_wreq_file, its name, its
 * bytes); what follows on fd 0 is the snippet's stdin. Its rlimits drop to
 * limits (soft and hard, so the snippet cannot raise them back) before the snippet runs. */
#define PS_WREQ_MAGIC 0x71727770u	/* "pwrq" */
struct ps_wreq {
	uint32_t magic;
	uint32_t n_inputs;		/* at most PS_WREQ_INPUTS_MAX */
	uint64_t code_len;
	struct ps_limits limits;
};

#define PS_WREQ_INPUTS_MAX 64
struct ps_wreq_file {
	uint32_t name_len;		/* 1..255 */
	uint32_t reserved;
	uint64_t len;
};

/* supervise.c: SIGINT, SIGTERM and SIGHUP to a one-shot parent end the run it supervises
 * (the worker killed, its scratch removed, the verdict still printed: internal_error). */
extern volatile sig_atomic_t ps_interrupted;
void ps_supervise_catch_signals(void);

/* supervise.c: the parent's side of one run. */
struct ps_supervise_fds {
	int out, err, status, report, in;	/* parent's ends; in = -1 when nothing to feed */
	int pidfd;
	/* -1: the worker is our child (wait4). Else it is a zygote's child and this is where
	 * the zygote writes a struct ps_reaped when it reaped it (EOF: the zygote died). */
	int life;
	const char *feed;			/* written to in, then in is closed */
	size_t feed_len;
	/* A zygote's worker without a per-run cgroup: its PS_REC_EXIT (behind the token) ends
	 * the run once its channels are closed and /proc/PID/stat (procstat, opened while it was
	 * alive) shows it in its own exit, not a signal's: nothing of it can run again, so no
	 * kernel death can follow the record. The answer need not wait for the exit to complete.
	 * threads: the policy lets it have other threads, so the exit must also be the last
	 * thread's, still in do_exit, with the record's status (ps_procstat_exiting_alone; the
	 * front sets early_exit only where the kernel shows it that status). */
	bool early_exit;
	bool threads;
	int procstat;				/* -1: none, the record is never enough */
	/* >0: a worker the front pinned to its own CPU for the run's start (pool.c, run_on);
	 * from widen_us on, each of its threads gets cpus */
	pid_t pinned;
	uint64_t widen_us;
	const cpu_set_t *cpus;
	/* >0: the worker, which steps down to SCHED_IDLE once its report is out (worker.c):
	 * put back to SCHED_OTHER if it is not in its exit at our second look (20 us on), so
	 * that a loaded machine cannot starve the last steps the answer waits for (root only) */
	pid_t idle_exit_pid;
};

#define PS_REAPED_MAGIC 0x64707270u	/* "prpd" */
struct ps_reaped {
	uint32_t magic;
	int32_t wait_status;
	struct rusage ru;
	uint8_t cgroup_used;
	uint64_t cgroup_memory_peak;
	uint64_t cgroup_oom_kills;
	uint8_t cpu_clock_read;
	uint64_t cpu_clock_us;		/* RLIMIT_CPU's clock before the reap, if read */
};

/* start_us: when the run's wall clock starts (the fork, or the request for a worker forked
 * ahead of demand). */
void ps_supervise(pid_t pid, const struct ps_supervise_fds *f, const struct ps_run *r,
		  uint64_t start_us, struct ps_outcome *o);

/* A forked worker as its parent sees it (split from ps_worker_run for the zygote). */
struct ps_worker_proc {
	pid_t pid;
	struct ps_supervise_fds f;	/* life = -1, no feed */
	char scratch[300];
	struct ps_cgroup cg;
	uint64_t fork_us;
};

/* Fork a worker with limits l applied by its phases. r: the run, known now (exec); NULL: the
 * worker is forked ahead of demand and waits for a struct ps_wreq on fd 0 after its last
 * phase. Fills o->report_token (and o->cgroup_used). 0, or -errno with o->host_error. */
int ps_worker_spawn(const struct ps_worker *w, const struct ps_limits *l, const struct ps_run *r,
		    unsigned slot, struct ps_worker_proc *p, struct ps_outcome *o);
/* After the worker was reaped: cgroup stats into o, remove its cgroup and scratch, close
 * whatever parent ends are still open. */
void ps_worker_cleanup(struct ps_worker_proc *p, struct ps_outcome *o);

#endif
