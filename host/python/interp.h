/* The embedded interpreter: initialised once in the parent (the "zygote" state),
 * then used by each forked worker to run one snippet. Only interp.c and audit.c include Python.h. */
#ifndef PS_INTERP_H
#define PS_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"

struct ps_interp_opts {
	const struct ps_policy *policy;
	const struct ps_strlist *modules;	/* resolved import allowlist */
	bool python_layer;	/* false: --disable-layer python (no hook, no allowlist, ctypes importable) */
	bool preimport;		/* import every allowed module now (serve/session zygotes) */
};

/* Parent, once: isolated PyConfig, audit hook, sys.path, dangerous modules removed, pyshim loaded.
 * 0, or -1 with the reason in err. */
int ps_interp_init(const struct ps_interp_opts *o, char *err, size_t errlen);

/* Without initialising anything: find the linked interpreter's stdlib, so that the parent
 * can prepare Landlock before a worker initialises the interpreter itself (one-shot exec).
 * ps_interp_stdlib_dir/dynload_dir are valid after it. 0, or -1 with the reason. */
int ps_interp_locate(char *err, size_t errlen);

/* Child, right after fork, before any other Python call. */
int ps_interp_after_fork(char *err, size_t errlen);	/* 0, or -1 with err */

/* Child: the per-run writable directory the audit hook grants (also the snippet's cwd). */
void ps_interp_set_scratch(const char *dir);

/* Child: the run's secret; the report is written after it (see result.c). */
void ps_interp_set_report_token(const char *token);

/* Child: the start of a run that does not depend on its snippet (the environment cleared,
 * pysnip's channels protected, a fresh __main__ with its scratch for TMPDIR and HOME). A worker
 * forked ahead of demand does it before its request comes, in the background; otherwise
 * ps_interp_run does. */
void ps_interp_begin(int report_fd);

/* Zygote, when every worker's scratch has the same path (its own tmpfs mounted there): the
 * Python half of ps_interp_begin, made once before the forks; workers inherit it. */
void ps_interp_begin_shared(const char *scratch);

/* Child, last phase: run code as __main__ under "<snippet>". Writes one JSON report
 * (see pyshim/) to report_fd. Returns the exit code for _exit: 0 finished, 1 uncaught exception. */
int ps_interp_run(const char *code, size_t len, int report_fd);	/* code[len] == '\0' */

/* --- session cells (session/holder.c; the code is interp_cell.c) --- */

/* Holder, once after its last phase: the run's start (ps_interp_begin), stdout and stderr
 * flushed at each line (a cell's output streams while it runs), builtins.input through
 * input_line (a malloc'd line, or NULL: EOFError), and the cell machinery warmed so that no
 * cell pays for it. 0, or -1 with err. */
int ps_interp_cell_setup(int report_fd, char *(*input_line)(const char *prompt, bool password),
			 char *err, size_t errlen);

/* A cell, in a fork of the holder: code as the next cell of __main__ (the last expression's
 * value is its result, as in IPython), its report (with "result" and "display") to
 * report_fd behind the token. Returns 0 ended, 1 raised. code[len] == '\0'. */
int ps_interp_cell_run(const char *code, size_t len, unsigned long count, int report_fd);

/* Threads of the interpreter other than the caller's (a cell's still running at its end). */
int ps_interp_cell_threads(void);

/* A spare (a cell forked ahead of its command), before its command: the compile and the
 * report of a cell rehearsed and thrown away, so that the pages every cell writes there are
 * copied from the holder now, not on the cell's path (each first write is a fault). Leaves
 * no state, output or exception (the caller holds SIGINT back meanwhile: holder.c). */
void ps_interp_cell_rehearse(void);

/* A served plot spare, before its request: a figure drawn and rendered to PNG as a run's
 * display is, then thrown away (pyshim display.py, rehearse_plot), so that the pages a plot
 * writes are copied from the zygote and matplotlib's fonts reloaded now, not on the run's
 * path. Leaves no figure, output, exception or denial behind. */
void ps_interp_rehearse_plot(void);

/* A disposable fork of the holder: kind "complete", "inspect" or "is_complete" of code at
 * cursor; a JSON report to report_fd behind the token. */
int ps_interp_cell_query(const char *kind, const char *code, size_t len, size_t cursor,
			 int report_fd);

/* Holder: fork a cell as os.fork() would, without its audit event. */
pid_t ps_interp_fork(void);

/* The interpreter's stdlib and lib-dynload directories (for Landlock's read-only rules). */
const char *ps_interp_stdlib_dir(void);
const char *ps_interp_dynload_dir(void);

#endif
