/* Internal to session/: the wire between the session host (host.c) and its holder
 * (holder.c), and between the front (front.c) and the session host.
 *
 * Host -> holder, on the holder's fd 0: a struct ps_scmd, then len bytes (the code, or an
 * input() line). Holder and cells -> host: struct ps_status_rec on fd 3 (PS_REC_CELL_*,
 * msg starting with the session's token), reports on fd 4 behind the token, output on 1-2.
 *
 * A cell: the holder forks it (fork(): the holder reaps it) and waits for it. The cell says
 * PS_REC_CELL_FORKED first (so the host knows it before anything else it says), runs, writes its report and PS_REC_CELL_DONE, and goes on as if it
 * were the holder (reading fd 0). The host decides: keep (it kills the old holder: the cell
 * is the holder from now on) or roll back (it kills the cell; the old holder reaps it, says
 * PS_REC_CELL_REAPED and reads fd 0 again, its state untouched). A cell that dies by itself
 * is reaped the same way. The holder never reads fd 0 while a cell lives, so fd 0 has one
 * reader at a time; input() lines go to the cell that asked. */
#ifndef PS_SESSION_INT_H
#define PS_SESSION_INT_H

#include <signal.h>
#include <stdint.h>

#include "session.h"

#define PS_SCMD_MAGIC 0x6d637370u	/* "pscm" */
enum ps_scmd_kind { PS_SCMD_EXEC = 1, PS_SCMD_QUERY = 2, PS_SCMD_INPUT = 3 };
#define PS_SCMD_REFUSED UINT64_MAX	/* PS_SCMD_INPUT: no line (EOFError) */

struct ps_scmd {
	uint32_t magic;
	uint32_t kind;
	uint64_t len;		/* bytes that follow */
	uint64_t count;		/* EXEC: the cell's execution_count */
	uint64_t cpu_ms;	/* EXEC: the cell's CPU (RLIMIT_CPU's soft limit in the cell) */
	uint64_t cursor;	/* QUERY */
	char query[16];		/* QUERY: "complete", "inspect", "is_complete" */
};

enum { PS_SESSION_TOKEN_LEN = 32 };

/* Python's SIGINT handler, taken by the host after the interpreter's start, before it forks
 * the holder (whose first phase defaults every signal): the holder puts it back so that an
 * interrupt is a KeyboardInterrupt. */
extern struct sigaction ps_session_py_sigint;

/* worker.become for a session holder (holder.c): the cell loop; never returns. */
__attribute__((noreturn)) void ps_session_holder_main(const char *token);

#endif
