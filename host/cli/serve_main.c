/* pysnip-serve: `pysnip serve` and the `exec --server` client. A binary of its
 * own so that the one-shot `pysnip exec` never loads libmicrohttpd or libcurl; `pysnip serve`
 * and `pysnip exec --server` exec this. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "http_client.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return ps_cmd_serve(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "exec")) {	/* `pysnip exec --server` lands here */
		ps_exec_client = ps_client_exec;
		return ps_cmd_exec(argc - 2, argv + 2);
	}
	fprintf(stderr, "usage: pysnip-serve serve [OPTIONS]   (normally run as `pysnip serve`)\n");
	return PS_EXIT_USAGE;
}
