/* Internal to the session host (host.c: the process, its holder and the front's requests;
 * host_cell.c: one cell from command to verdict). */
#ifndef PS_SESSION_HOST_INT_H
#define PS_SESSION_HOST_INT_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "run/worker.h"
#include "sandbox/sandbox.h"
#include "session_int.h"

enum { FRONT_FD = 3 };

/* A process by both its names (procs.c). */
struct ps_host_pid {
	pid_t proc;	/* as /proc names it */
	pid_t ours;	/* as our calls (pidfd_open, kill) name it */
};

struct host {
	struct ps_policy p;
	struct ps_worker w;
	struct ps_limits cell;		/* the cells' default limits */
	struct ps_session_limits sl;
	uint32_t layers_off;
	unsigned slot;
	int slot_lock;			/* flock'd file that reserves our uid, or -1 */
	uint64_t grace_ms;		/* interrupt -> kill */

	/* the holder: the channels of the worker first forked (every later holder and cell
	 * inherits them), the current holder's pid (ours) and pidfd, its process group */
	struct ps_worker_proc hp;
	struct ps_outcome ho;
	bool holder_up;
	pid_t holder;
	pid_t holder_proc;		/* the holder as /proc names it (procs.c) */
	int holder_pidfd;
	int dying_pidfd;		/* the holder a kept cell replaced, until it is gone */
	pid_t dying;
	uint64_t dying_kill_at_us;	/* its SIGKILL, deferred (ps_host_kill_dying): 0 sent */
	pid_t group;
	/* the next cell, forked ahead by the holder (holder.c), from its FORKED record: its pid
	 * as the holder names it and its parent's /proc pid; resolved to both names and a pidfd
	 * between cells (spare.ours 0 until then; inner 0: none said) */
	pid_t spare_inner, spare_parent;
	struct ps_host_pid spare;
	int spare_pidfd;
	struct ps_held held;
	char token[40];
	bool renice;			/* the session's background work may run at nice 19 */
	cpu_set_t cpus;			/* ours when we started: a cell's CPUs once it runs on */

	uint64_t count;			/* execution_count of the last cell */
	uint64_t cells, cpu_us, start_us, idle_since_us;
	uint64_t rolled_back;
	char lost[256];			/* the holder died between cells: said by the next verdict */
	char ended[600];		/* the session ended: why */

	char *in;			/* the front's bytes not yet a whole line */
	size_t in_len, in_cap;
};

/* procs.c: a child of parent_proc (a /proc pid; <= 0: of ours) whose pid is inner (in its
 * innermost namespace; for a child of ours, in our namespace): by both names. 0 or -1. */
int ps_host_find_child(pid_t parent_proc, pid_t inner, struct ps_host_pid *out);
/* Reap every child of ours that has ended but keep (the first holder, left a zombie so that
 * its pid, the session's process group, cannot be reused while we may signal the group).
 * Returns how many children are still running. */
int ps_host_reap_others(pid_t keep);

/* host.c */
/* The holder said it forked the next cell ahead (inner: the pid it gave, parent_proc: the
 * forking holder's /proc pid); found now if it can be. ps_host_take_spare: resolve it (if
 * not yet) and hand it to the cell about to run (0), or -1 when there is none known. */
void ps_host_note_spare(struct host *h, pid_t inner, pid_t parent_proc);
int ps_host_take_spare(struct host *h, struct ps_host_pid *out, int *pidfd);
void ps_host_drop_spare(struct host *h);
/* A process of the session at this nice value, if h->renice and its pidfd says it is alive
 * (so that pid is still its). */
/* ps_host_renice's levels (host.c says why each) */
enum ps_prio { PS_PRIO_FOREGROUND, PS_PRIO_AHEAD, PS_PRIO_TEARDOWN };
void ps_host_renice(struct host *h, int pidfd, pid_t pid, enum ps_prio prio);
/* A cell's first PIN_US on the CPU we run on, then every CPU we have (host.c says why). */
enum { PIN_US = 3000 };
bool ps_host_pin(struct host *h, pid_t pid);
void ps_host_unpin(struct host *h, pid_t pid);
/* Records the holder wrote between cells (a spare's FORKED): read without blocking. */
void ps_host_read_idle_records(struct host *h);
int ps_host_send(struct host *h, const char *line);	/* one JSON line to the front */
int ps_host_spawn_holder(struct host *h, char *err, size_t errlen);
/* Has a session limit been hit (h->ended says which)? */
bool ps_host_session_over(struct host *h, uint64_t now_us);
void ps_host_kill_holder(struct host *h);
/* host_cell.c: the SIGKILL of the holder the last kept cell replaced, due TEARDOWN_DELAY_US
 * after its verdict went out (or now, when something else comes first). */
enum { TEARDOWN_DELAY_US = 300 };
void ps_host_kill_dying(struct host *h);
/* A line from the front while a cell runs (interrupt, input): handled by host_cell.c's
 * callback; returns true when taken. */
char *ps_host_next_line(struct host *h, bool *eof);	/* NULL: nothing whole yet */

/* host_cell.c: run one cell or query; the verdict (or query answer) line is sent to the
 * front. kind PS_SCMD_EXEC or PS_SCMD_QUERY. 0, or -1 when the front went away. */
struct ps_cell_req {
	int kind;
	const char *code;
	size_t len;
	struct ps_limits limits;	/* EXEC */
	const char *query;		/* QUERY */
	size_t cursor;
};
int ps_host_run_cell(struct host *h, const struct ps_cell_req *q);

/* One cell as host_cell.c runs it. */
struct cell {
	struct host *h;
	const struct ps_cell_req *q;
	struct ps_run r;
	struct ps_outcome o;
	uint64_t start_us, deadline_us, int_deadline_us, cpu_check_us;
	uint64_t widen_us;	/* pinned to our CPU until then (ps_host_pin) */
	pid_t pid;		/* the cell in our PID namespace, 0 until known */
	pid_t pid_proc;		/* and as /proc names it */
	int pidfd;
	bool done, reaped, decided, keep, killed, holder_dead, cell_dead, front_gone;
	bool interrupted, int_killed, cpu_killed, input_pending;
	bool respared;		/* the cell's spare died before its command: the next took it */
	/* threads: the kept cell's report said this many still ran; shedding until its
	 * single-threaded copy said FORKED (err 1: the copy; 2: no fork, threads kept) */
	int threads;
	bool shedding, shed_failed;
	/* kept, no thread to shed: the old holder's kill and the SPARE command wait until the
	 * verdict is out (the killed holder's teardown took the CPU from the verdict: ~1.7 ms) */
	bool take_over_after_verdict;
	uint64_t shed_deadline_us;	/* no copy by then (a fork stuck): the cell is killed */
	uint64_t output_total;
	char *rendered;		/* the verdict as decide() rendered it (its outcome is final) */
	size_t scan_off;	/* the report channel up to here is scanned for display frames */
};

/* host_verdict.c: the verdict's status from its text; the cell's verdict line and a query's
 * answer line to the front (0, or -1 when the front is gone). */
void ps_host_status_of(const char *json, char *buf, size_t len);
int ps_host_send_verdict(struct cell *c);
int ps_host_send_query(struct cell *c);

#endif
