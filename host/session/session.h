/* Sessions (DESIGN.md section 6): notebook cells over a kept state, each cell in a fork of a
 * sandboxed holder, a cell that dies rolled back. This header is the FRONT's side: a handle
 * over one session's host process, usable from a multi-threaded program (pysnip session, the
 * Jupyter kernel, serve).
 *
 * Processes. ps_session_start fork+execs `pysnip session-host` (the front never forks an
 * interpreter): that process, trusted and single-threaded, initialises the interpreter once,
 * forks the holder (a worker with every phase of the policy applied, its seccomp filter also
 * allowing fork) and supervises every cell: wall clock, output caps, CPU, rollback, the
 * verdict. The front and the session host speak JSON lines over one socket (host.c says
 * which). Everything of a session lives under the session host: closing the handle, or the
 * front dying, ends it all (PID namespace, process group, scratch).
 *
 * Threads. One exec or query at a time per handle (calls are serialised by the handle);
 * ps_session_interrupt may be called from any thread while one runs. Callbacks run on the
 * thread that called ps_session_exec, before it returns. */
#ifndef PS_SESSION_H
#define PS_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits of the session as a whole, on top of each cell's. 0: none. */
struct ps_session_limits {
	uint64_t idle_ms;	/* no cell for this long: the session ends */
	uint64_t lifetime_ms;	/* the session ends this long after its start */
	uint64_t cpu_ms;	/* CPU of all cells together */
	uint64_t cells;		/* cells run (queries not counted) */
};

struct ps_session_opts {
	const char *policy;		/* NAME or PATH; NULL: "default" */
	/* the cells' default limits, human units as on the command line ("2s", "256M"); NULL:
	 * the policy's. memory is the session's as a whole (the holder and each cell) */
	const char *wall, *cpu, *memory, *output;
	struct ps_session_limits session;
	uint32_t layers_off;		/* 1 << enum ps_layer (policy/policy.h) */
	/* The pysnip binary to exec; NULL: "pysnip" next to /proc/self/exe. */
	const char *exe;
	/* A uid from the policy's range: -1 picks one no other live session on this host holds
	 * (a lock file per uid), so that two sessions never share a uid where the range allows. */
	int slot;
};

/* What a cell produces while it runs. Any member may be NULL. */
struct ps_session_cb {
	void *ctx;
	/* name: "stdout" or "stderr"; data: the chunk as the cell wrote it (not NUL-terminated) */
	void (*stream)(void *ctx, const char *name, const char *data, size_t len);
	/* bundle_json: {"data": {mime: value}, "metadata": {}} of a display() call, as the cell
	 * makes it (and of each matplotlib figure open at its end); the verdict's "display" lists
	 * them all again */
	void (*display)(void *ctx, const char *bundle_json);
	/* The cell called input(prompt): return a malloc'd line (no newline; the session frees
	 * it), or NULL to refuse (the cell gets EOFError). NULL callback: always refused. */
	char *(*input)(void *ctx, const char *prompt, bool password);
};

struct ps_session;

/* Start a session: the session host is up and its holder has applied every phase when this
 * returns. 0 with *out, or -1 with the reason in err (a policy error starts "policy "). */
int ps_session_start(const struct ps_session_opts *o, struct ps_session **out, char *err,
		     size_t errlen);

/* Run one cell. limits_json: NULL, or a JSON object of per-cell overrides in human units
 * ({"wall": "2s", "cpu": "1s", "output": "64k"}), which may only tighten the session's.
 * Returns the verdict as malloc'd JSON text: the run verdict of DESIGN.md section 2 plus
 * "execution_count", "state" ("kept" | "rolled_back" | "lost"), "state_reason" (why, when not
 * kept), "result" (the last expression's MIME bundle, or null) and "display" (bundles). NULL
 * only with err set: bad limits_json (starts "limits"), or the session has ended (starts
 * "session ended: " and the reason). */
char *ps_session_exec(struct ps_session *s, const char *code, size_t len, const char *limits_json,
		      const struct ps_session_cb *cb, char *err, size_t errlen);

/* Interrupt the running cell, from any thread: SIGINT (KeyboardInterrupt in the cell; what it
 * did is kept, as in Jupyter); a cell still running after the grace period is killed and
 * rolled back. No cell running: nothing happens. 0, or -1 when the session is gone. */
int ps_session_interrupt(struct ps_session *s);

/* Complete or inspect in a disposable fork of the holder (the state is never changed).
 * kind: "complete" | "inspect" | "is_complete". Returns malloc'd JSON text:
 * complete: {"matches": [...], "cursor_start": n, "cursor_end": n}
 * inspect: {"found": bool, "data": {"text/plain": ...}}
 * is_complete: {"status": "complete" | "incomplete" | "invalid", "indent": "..."}
 * NULL with err when the session is gone or the query failed. */
char *ps_session_query(struct ps_session *s, const char *kind, const char *code, size_t len,
		       size_t cursor, char *err, size_t errlen);

/* A fresh state: the holder and any cell are killed, a new holder forked from the session
 * host's pristine interpreter; execution_count starts again. 0, or -1 with err. */
int ps_session_restart(struct ps_session *s, char *err, size_t errlen);

/* {"id"?, "execution_count", "cells", "cpu_ms", "alive", "ended_reason", "sandbox": {...}} as
 * malloc'd JSON text, or NULL. */
char *ps_session_info(struct ps_session *s);

/* Why the session ended (a session limit, the holder lost), or NULL while it is alive. The
 * text stays valid until ps_session_close. */
const char *ps_session_ended(struct ps_session *s);

/* While no other call runs: wait up to timeout_ms (0: just look) for the session to end by
 * itself (idle timeout, lifetime). Its reason, or NULL while it is alive (or a call runs). */
const char *ps_session_wait_ended(struct ps_session *s, int timeout_ms);

/* End the session: its host, holder and cells are killed and reaped, its scratch removed,
 * every descriptor of the handle closed. Nothing is left. NULL is fine. */
void ps_session_close(struct ps_session *s);

/* cell_limits.c: what the session host makes of a cell's limits (ps_session_exec's
 * limits_json, parsed): cell, the session's cell limits under policy p, tightened by lim
 * (NULL or JSON null: none; wall, cpu, output in human units or numbers). 0 with *out, or -1
 * with err naming the field ("limits.wall: ..."). */
struct cJSON;
struct ps_policy;
struct ps_limits;
int ps_session_cell_limits(const struct ps_policy *p, const struct ps_limits *cell,
			   const struct cJSON *lim, struct ps_limits *out, char *err,
			   size_t errlen);

/* `pysnip session-host`: the internal command ps_session_start execs. */
int ps_cmd_session_host(int argc, char **argv);

/* A served session (zygote/): in a fork of a zygote, whose interpreter is initialised and
 * policy p loaded, be the session host on fd 3. Returns the exit status. */
struct ps_policy;
struct ps_limits;
int ps_session_host_run(const struct ps_policy *p, uint32_t layers_off, const char *shared_scratch,
			const struct ps_limits *cell, const struct ps_session_limits *sl, int slot);

/* The front's handle on a session host started by someone else (a zygote): fd is the
 * socket to it (taken over), pidfd its pidfd (taken over). Waits for its ready line. 0 with
 * *out, or -1 with err. */
int ps_session_adopt(int fd, int pidfd, struct ps_session **out, char *err, size_t errlen);

/* Before the first cell of an adopted session (one a zygote forked ahead of demand with its
 * policy's limits): the cells' wall, CPU and output (may only tighten) and the session's
 * limits. Sent without waiting for the host's answer (a round trip less for a new session):
 * 0, or -1 with err when it could not be sent; a refusal is the next call's error (starting
 * "session configure: "). */
int ps_session_configure(struct ps_session *s, const struct ps_limits *cell,
			 const struct ps_session_limits *sl, char *err, size_t errlen);

#endif
