/* pysnip: run untrusted Python snippets in a sandbox and report a JSON verdict. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "util/util.h"
#include "session/session.h"
#include "zygote/zygote.h"

#ifndef PS_VERSION
#define PS_VERSION "0.1.0"
#endif

/* `serve` lives in pysnip-serve, next to this binary, so that a one-shot run never loads
 * the HTTP library and what it pulls in. */
static int run_serve(int argc, char **argv)
{
	ps_exec_sibling("pysnip-serve", "serve", argc, argv);
	return PS_EXIT_INTERNAL;
}

/* `kernel` (and `kernel install`) live in pysnip-kernel, so that only it links libzmq and
 * libcrypto. */
static int run_kernel(int argc, char **argv)
{
	ps_exec_sibling("pysnip-kernel", "kernel", argc, argv);
	return PS_EXIT_INTERNAL;
}

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "exec", ps_cmd_exec, "run one snippet, print its verdict" },
	{ "check-policy", ps_cmd_check_policy, "validate a policy and print it resolved" },
	{ "serve", run_serve, "HTTP JSON API: warm zygotes, worker pool, auth, metrics" },
	{ "learn", ps_cmd_learn, "run a snippet reporting instead of denying; print the policy it needs" },
	{ "kernel", run_kernel, "Jupyter kernel, every cell sandboxed; `kernel install` its spec" },
	{ "zygote", ps_cmd_zygote, NULL },	/* internal: started by pysnip-serve */
	{ "session", ps_cmd_session, "notebook cells over a kept state, JSON lines on stdio" },
	{ "session-host", ps_cmd_session_host, NULL },	/* internal: started by a session's front */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pysnip COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].help)	/* internal commands have none */
			fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n`pysnip COMMAND --help` for a command's options.\n"
		   "exit status: 0 the snippet ran (see the verdict's status), 1 usage or policy "
		   "error, 2 internal error\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return PS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return PS_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pysnip %s\n", PS_VERSION);
		return PS_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 2, argv + 2);
	fprintf(stderr, "pysnip: unknown command '%s' (see pysnip --help)\n", argv[1]);
	return PS_EXIT_USAGE;
}
