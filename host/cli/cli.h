/* Command-line parsing: one options struct filled from a table. */
#ifndef PS_CLI_H
#define PS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum ps_override { PS_OV_WALL, PS_OV_CPU, PS_OV_MEMORY, PS_OV_OUTPUT, PS_OV_CPUS, PS_OV_COUNT };

#define PS_MAX_INPUTS 64

struct ps_opts {
	const char *policy;		/* NAME or PATH; "default" */
	const char *file;		/* snippet FILE or "-" */
	const char *stdin_file;		/* --stdin */
	const char *inputs[PS_MAX_INPUTS];	/* --input [NAME=]PATH */
	int n_inputs;
	const char *output_dir;		/* --output-dir */
	const char *override[PS_OV_COUNT];
	uint32_t layers_off;		/* --disable-layer, 1 << enum ps_layer */
	bool pretty;
	bool help;
	const char *server;		/* --server URL */
	const char *listen;		/* serve --listen */
	const char *token_file;		/* serve --token-file */
	long workers, queue;		/* serve --workers/--queue */
	const char *header_timeout;	/* serve --header-timeout */
	const char *seccomp_profile;	/* --seccomp-profile FILE (exec, check-policy) */
	bool strict;			/* check-policy --strict: warnings are errors */
	const char *audit_log;		/* --audit-log FILE (exec, serve; "-" stdout in serve) */
	const char *learn_via;		/* learn --via notify|log */
	long max_sessions;		/* serve --max-sessions */
};

enum ps_cmd_kind { PS_CMD_EXEC, PS_CMD_CHECK_POLICY, PS_CMD_SERVE, PS_CMD_LEARN };

/* Parse argv after the command word. 0, or -1 after printing "pysnip: <option>: reason". */
int ps_cli_parse(enum ps_cmd_kind cmd, int argc, char **argv, struct ps_opts *o);
void ps_cli_usage(enum ps_cmd_kind cmd, FILE *f);

/* The policy field an override names ("wall", "cpu", "memory", "output"). */
const char *ps_override_field(enum ps_override ov);

#endif
