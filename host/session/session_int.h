/* Internal to session/: the wire between the session host (host.c) and its holder
 * (holder.c), and between the front (front.c) and the session host.
 *
 * Host -> holder, on the holder's fd 0: a struct ps_scmd, then len bytes (the code, or an
 * input() line). Holder and cells -> host: struct ps_status_rec on fd 3 (PS_REC_CELL_*,
 * msg starting with the session's token), reports on fd 4 behind the token, output on 1-2.
 *
 * A cell: the holder forks it AHEAD of its command (the spare: fork(), the holder reaps it)
 * and waits for it. The spare says PS_REC_CELL_FORKED at once (the host learns its pid
 * between cells), reads its command from fd 0, runs, writes its report and PS_REC_CELL_DONE,
 * and waits on fd 0 as the next holder. The host decides: keep (it kills the old holder and
 * sends PS_SCMD_SPARE: the cell is the holder from now on, and forks the next spare) or roll
 * back (it kills the cell; the old holder reaps it, says PS_REC_CELL_REAPED and forks the
 * next spare, its state untouched). A cell that dies by itself is reaped the same way. A
 * holder that could not fork ahead forks on the next command.
 *
 * Threads do not outlive a cell: a kept cell whose report says threads are still running
 * (daemon ones; the others were joined) gets PS_SCMD_SHED instead: it forks a copy of itself
 * (fork copies only the calling thread), which says PS_REC_CELL_FORKED with err 1 and is the
 * holder from then on (it waits for PS_SCMD_SPARE); the host kills the threaded one, which
 * only sleeps until then. Only one process reads fd 0
 * at a time (the spare, or the holder while it has none), so input() lines go to the cell
 * that asked.
 */
#ifndef PS_SESSION_INT_H
#define PS_SESSION_INT_H

#include <signal.h>
#include <stdint.h>

#include "session.h"

#define PS_SCMD_MAGIC 0x6d637370u	/* "pscm" */
enum ps_scmd_kind { PS_SCMD_EXEC = 1, PS_SCMD_QUERY = 2, PS_SCMD_INPUT = 3, PS_SCMD_SPARE = 4,
		    PS_SCMD_SHED = 5 };
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
