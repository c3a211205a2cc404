/* pysnip-kernel: `pysnip kernel` (a Jupyter kernel) and `pysnip kernel install`. A binary of
 * its own so that the one-shot `pysnip` never loads libzmq or libcrypto; `pysnip kernel` execs
 * this. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "policy/policy.h"
#include "util/util.h"

struct kopts {
	struct ps_kernel_opts run;
	struct ps_kernelspec_opts spec;
	const char *limit_args[9];	/* install: "--wall", "2s", ..., NULL */
	size_t nlimit;
	const char *opt;		/* the option being parsed, for its setter */
	bool help;
};

enum { ARG_NONE, ARG_STR };

static int set_layer_off(struct kopts *o, const char *v)
{
	int l = ps_layer_from_name(v);

	if (l < 0) {
		ps_err("kernel: --disable-layer %s: unknown layer", v);
		return -1;
	}
	o->run.layers_off |= 1u << l;
	return 0;
}

/* A limit is checked here, so that a bad one is the command line's error (exit 1). */
static int limit_ok(const char *opt, const char *v)
{
	char err[128];
	uint64_t n;
	int rc = !strcmp(opt, "--wall") || !strcmp(opt, "--cpu") ?
			 ps_parse_duration_ms(v, &n, err, sizeof(err)) :
			 ps_parse_size(v, &n, err, sizeof(err));

	if (rc < 0)
		ps_err("kernel: %s %s: %s", opt, v, err);
	return rc;
}

static int set_run_limit(struct kopts *o, const char *v)
{
	static const struct { const char *opt; size_t off; } to[] = {
		{ "--wall", offsetof(struct kopts, run.wall) },
		{ "--cpu", offsetof(struct kopts, run.cpu) },
		{ "--memory", offsetof(struct kopts, run.memory) },
		{ "--output", offsetof(struct kopts, run.output) },
	};

	if (limit_ok(o->opt, v) < 0)
		return -1;
	for (size_t i = 0; i < PS_ARRAY_LEN(to); i++)
		if (!strcmp(to[i].opt, o->opt))
			*(const char **)((char *)o + to[i].off) = v;
	return 0;
}

static int add_limit(struct kopts *o, const char *v)
{
	if (limit_ok(o->opt, v) < 0)
		return -1;
	for (size_t i = 0; i < o->nlimit; i += 2)
		if (!strcmp(o->limit_args[i], o->opt)) {
			o->limit_args[i + 1] = v;	/* the last one given wins */
			return 0;
		}
	o->limit_args[o->nlimit++] = o->opt;
	o->limit_args[o->nlimit++] = v;
	o->spec.limit_args = o->limit_args;
	return 0;
}

static const struct option {
	const char *name;
	bool install;		/* an option of `kernel install` (else of `kernel`) */
	int arg;
	size_t off;		/* const char * in struct kopts, when no setter */
	int (*set)(struct kopts *o, const char *v);
	const char *help;
} options[] = {
	{ "-f", false, ARG_STR, offsetof(struct kopts, run.connection_file), NULL,
	  "FILE  the connection file (Jupyter passes it)" },
	{ "--policy", false, ARG_STR, offsetof(struct kopts, run.policy), NULL,
	  "P  the cells' policy (NAME or PATH; default notebook)" },
	{ "--disable-layer", false, ARG_STR, 0, set_layer_off,
	  "L  switch one layer off (for tests; repeatable)" },
	{ "--wall", false, ARG_STR, 0, set_run_limit,
	  "T  each cell's wall-clock limit (\"10s\"; default the policy's)" },
	{ "--cpu", false, ARG_STR, 0, set_run_limit,
	  "T  each cell's CPU-time limit" },
	{ "--memory", false, ARG_STR, 0, set_run_limit,
	  "SIZE  the session's memory limit (\"512M\")" },
	{ "--output", false, ARG_STR, 0, set_run_limit,
	  "SIZE  each cell's output limit" },
	{ "--wall", true, ARG_STR, 0, add_limit, "T  written into the kernelspec's argv" },
	{ "--cpu", true, ARG_STR, 0, add_limit, "T  written into the kernelspec's argv" },
	{ "--memory", true, ARG_STR, 0, add_limit, "SIZE  written into the kernelspec's argv" },
	{ "--output", true, ARG_STR, 0, add_limit, "SIZE  written into the kernelspec's argv" },
	{ "--user", true, ARG_NONE, offsetof(struct kopts, spec.user), NULL,
	  "  install in the user's Jupyter data directory" },
	{ "--prefix", true, ARG_STR, offsetof(struct kopts, spec.dir), NULL,
	  "DIR  install in DIR/share/jupyter/kernels" },
	{ "--name", true, ARG_STR, offsetof(struct kopts, spec.name), NULL,
	  "N  the kernelspec's name (default pysnip)" },
	{ "--policy", true, ARG_STR, offsetof(struct kopts, spec.policy), NULL,
	  "P  the policy the kernelspec starts the kernel with" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pysnip kernel -f CONNECTION_FILE [--policy P]\n"
		   "       pysnip kernel install [--user|--prefix DIR] [--name N] [--policy P]\n\n");
	for (size_t i = 0; i < PS_ARRAY_LEN(options); i++)
		fprintf(f, "  %s%s %s\n", options[i].install ? "install " : "", options[i].name,
			options[i].help);
}

static int parse(int argc, char **argv, bool install, struct kopts *o)
{
	for (int i = 0; i < argc; i++) {
		const struct option *op = NULL;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			o->help = true;
			continue;
		}
		for (size_t j = 0; j < PS_ARRAY_LEN(options); j++)
			if (options[j].install == install && !strcmp(options[j].name, argv[i]))
				op = &options[j];
		if (!op) {
			ps_err("kernel%s: unknown option '%s' (see pysnip kernel --help)",
			       install ? " install" : "", argv[i]);
			return -1;
		}
		if (op->arg == ARG_NONE) {
			*(int *)((char *)o + op->off) = 1;
			continue;
		}
		if (++i == argc) {
			ps_err("kernel: %s needs a value", op->name);
			return -1;
		}
		o->opt = op->name;
		if (op->set ? op->set(o, argv[i]) < 0 : 0)
			return -1;
		if (!op->set)
			*(const char **)((char *)o + op->off) = argv[i];
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kopts o = { 0 };
	char exe[PATH_MAX];
	bool install;

	if (argc < 2 || strcmp(argv[1], "kernel")) {
		fprintf(stderr, "usage: pysnip-kernel kernel ...   (normally run as `pysnip kernel`)\n");
		return PS_EXIT_USAGE;
	}
	install = argc >= 3 && !strcmp(argv[2], "install");
	if (parse(argc - 2 - install, argv + 2 + install, install, &o) < 0)
		return PS_EXIT_USAGE;
	if (o.help) {
		usage(stdout);
		return PS_EXIT_OK;
	}
	if (install) {
		if (o.spec.user && o.spec.dir) {
			ps_err("kernel install: --user and --prefix together: choose one");
			return PS_EXIT_USAGE;
		}
		/* what `pysnip kernel` execs, named directly: one exec (of the larger binary)
		 * less at every kernel start */
		snprintf(exe, sizeof(exe), "%s/pysnip-kernel", ps_exe_dir());
		o.spec.exe = exe;
		return ps_kernelspec_install(&o.spec);
	}
	if (!o.run.connection_file) {
		ps_err("kernel: -f CONNECTION_FILE is needed (Jupyter passes it)");
		usage(stderr);
		return PS_EXIT_USAGE;
	}
	return ps_kernel_run(&o.run);
}
