/* Command-line parsing: one options struct filled from a table. */
#ifndef PS_CLI_H
#define PS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum ps_override { PS_OV_WALL, PS_OV_CPU, PS_OV_MEMORY, PS_OV_OUTPUT, PS_OV_COUNT };

struct ps_opts {
	const char *policy;		/* NAME or PATH; "default" */
	const char *file;		/* snippet FILE or "-" */
	const char *stdin_file;		/* --stdin */
	const char *override[PS_OV_COUNT];
	uint32_t layers_off;		/* --disable-layer, 1 << enum ps_layer */
	bool pretty;
	bool help;
	const char *server;		/* --server URL */
	const char *listen;		/* serve --listen */
	const char *token_file;		/* serve --token-file */
	long workers, queue;		/* serve --workers/--queue */
	long max_sessions;		/* serve --max-sessions */
};

enum ps_cmd_kind { PS_CMD_EXEC, PS_CMD_CHECK_POLICY, PS_CMD_SERVE };

/* Parse argv after the command word. 0, or -1 after printing "pysnip: <option>: reason". */
int ps_cli_parse(enum ps_cmd_kind cmd, int argc, char **argv, struct ps_opts *o);
void ps_cli_usage(enum ps_cmd_kind cmd, FILE *f);

/* The policy field an override names ("wall", "cpu", "memory", "output"). */
const char *ps_override_field(enum ps_override ov);

#endif
