/* `pysnip kernel`: a Jupyter kernel (messaging 5.3 over ZeroMQ) whose cells run in the session
 * engine, sandboxed (DESIGN.md section 7). The front is trusted C: it signs and verifies
 * messages, routes them, and never runs or parses a cell's Python. */
#ifndef PS_KERNEL_H
#define PS_KERNEL_H

#include <stdint.h>

struct ps_kernel_opts {
	const char *connection_file;	/* -f */
	const char *policy;		/* --policy NAME|PATH, "notebook" when NULL */
	uint32_t layers_off;		/* --disable-layer, 1 << enum ps_layer */
	/* --wall/--cpu/--memory/--output: each cell's limits (human units), NULL: the policy's */
	const char *wall, *cpu, *memory, *output;
};

/* Serve until a shutdown_request (or SIGTERM). Returns pysnip's exit status: 0 after a
 * shutdown, 1 for a bad connection file or policy (named on stderr), 2 internal error. */
int ps_kernel_run(const struct ps_kernel_opts *o);

struct ps_kernelspec_opts {
	const char *dir;	/* --prefix DIR, or NULL */
	int user;		/* --user */
	const char *name;	/* --name, "pysnip" when NULL */
	const char *policy;	/* --policy, written into argv when given */
	const char *const *limit_args;	/* "--wall", "2s", ... written into argv, NULL-ended */
	const char *exe;	/* the `pysnip` to run (absolute) */
};

/* Write NAME/kernel.json under the kernelspec directory of --user (~/.local/share/jupyter/
 * kernels), --prefix DIR (DIR/share/jupyter/kernels) or the system (/usr/local/share/...).
 * Prints the directory. Returns pysnip's exit status. */
int ps_kernelspec_install(const struct ps_kernelspec_opts *o);

#endif
