/* Command-line options from one table; no switch ladders. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "policy/policy.h"
#include "util/util.h"

enum opt_kind { OPT_FLAG, OPT_STRING, OPT_OVERRIDE, OPT_LAYER, OPT_LONG, OPT_INPUT };

struct opt {
	const char *name;
	enum opt_kind kind;
	unsigned cmds;		/* 1 << enum ps_cmd_kind where it applies */
	size_t off;		/* field in struct ps_opts */
	int index;		/* override index */
	const char *arg, *help;
};

#define F(field) offsetof(struct ps_opts, field)
#define EXEC (1u << PS_CMD_EXEC)
#define CHECK (1u << PS_CMD_CHECK_POLICY)
#define SERVE (1u << PS_CMD_SERVE)
#define LEARN (1u << PS_CMD_LEARN)

static const struct opt opts[] = {
	{ "--policy", OPT_STRING, EXEC | LEARN, F(policy), 0, "NAME|PATH",
	  "policy by name (policies/NAME.json) or path; default: default" },
	{ "--policy", OPT_STRING, SERVE, F(policy), 0, "NAME|PATH[,...]",
	  "the policies served, by name or path, comma-separated; default: default,strict,notebook" },
	{ "--stdin", OPT_STRING, EXEC | LEARN, F(stdin_file), 0, "FILE", "data for the snippet's sys.stdin" },
	{ "--input", OPT_INPUT, EXEC, 0, 0, "[NAME=]PATH",
	  "a file the run reads at input/NAME (read-only); repeatable" },
	{ "--output-dir", OPT_STRING, EXEC, F(output_dir), 0, "DIR",
	  "where the files the run leaves in output/ are written" },
	{ "--wall-time", OPT_OVERRIDE, EXEC, 0, PS_OV_WALL, "DURATION", "wall-clock limit (2s, 500ms)" },
	{ "--cpu-time", OPT_OVERRIDE, EXEC, 0, PS_OV_CPU, "DURATION", "CPU-time limit" },
	{ "--memory", OPT_OVERRIDE, EXEC, 0, PS_OV_MEMORY, "SIZE", "address-space limit (256M)" },
	{ "--output-limit", OPT_OVERRIDE, EXEC, 0, PS_OV_OUTPUT, "SIZE",
	  "stdout+stderr byte cap (64K)" },
	{ "--cpus", OPT_OVERRIDE, EXEC, 0, PS_OV_CPUS, "N",
	  "CPU share (0.5): cgroup cpu.max, needs a delegated cgroup" },
	{ "--disable-layer", OPT_LAYER, EXEC | SERVE | LEARN, 0, 0, "NAME",
	  "switch a layer off (python, identity, landlock, seccomp, namespaces); repeatable" },
	{ "--server", OPT_STRING, EXEC, F(server), 0, "URL", "send the snippet to a running server" },
	{ "--listen", OPT_STRING, SERVE, F(listen), 0, "ADDR",
	  "HOST:PORT or unix:/path (default 127.0.0.1:8080)" },
	{ "--token-file", OPT_STRING, SERVE, F(token_file), 0, "FILE", "require this bearer token" },
	{ "--workers", OPT_LONG, SERVE, F(workers), 0, "N", "concurrent snippets (default: cores)" },
	{ "--queue", OPT_LONG, SERVE, F(queue), 0, "N", "queued requests before 429" },
	{ "--header-timeout", OPT_STRING, SERVE, F(header_timeout), 0, "DURATION",
	  "a connection is cut if no request on it passed auth this long after connecting (10s)" },
	{ "--seccomp-profile", OPT_STRING, EXEC | CHECK, F(seccomp_profile), 0, "FILE",
	  "a Docker/OCI seccomp profile in place of the policy's syscall groups" },
	{ "--strict", OPT_FLAG, CHECK, F(strict), 0, NULL,
	  "a profile's unknown syscall names are an error, not a warning" },
	{ "--audit-log", OPT_STRING, EXEC, F(audit_log), 0, "FILE", "append one JSON line per run" },
	{ "--audit-log", OPT_STRING, SERVE, F(audit_log), 0, "FILE",
	  "append one JSON line per run and per refused request (- for stdout)" },
	{ "--max-sessions", OPT_LONG, SERVE, F(max_sessions), 0, "N",
	  "live sessions (/v1/sessions) before 429 (default 64)" },
	{ "--via", OPT_STRING, LEARN, F(learn_via), 0, "notify|log",
	  "how the filter reports (default notify; log: the kernel's audit records)" },
	{ "--pretty", OPT_FLAG, EXEC | CHECK | LEARN, F(pretty), 0, NULL, "indent the JSON" },
	{ "--help", OPT_FLAG, EXEC | CHECK | SERVE | LEARN, F(help), 0, NULL, "this help" },
};

static const char *const overrides[PS_OV_COUNT] = { "wall", "cpu", "memory", "output", "cpus" };

const char *ps_override_field(enum ps_override ov)
{
	return overrides[ov];
}

static const char *const usages[] = {
	[PS_CMD_EXEC] = "usage: pysnip exec [OPTIONS] FILE|-",
	[PS_CMD_CHECK_POLICY] = "usage: pysnip check-policy [--pretty] [--seccomp-profile FILE "
				"[--strict]] [NAME|PATH]",
	[PS_CMD_SERVE] = "usage: pysnip serve [OPTIONS]",
	[PS_CMD_LEARN] = "usage: pysnip learn [--policy BASE] [OPTIONS] FILE|-\n\n"
			 "Run the snippet with the seccomp filter reporting instead of killing and "
			 "print a policy\nthat extends BASE with what it needed (review it first).",
};

void ps_cli_usage(enum ps_cmd_kind cmd, FILE *f)
{
	fprintf(f, "%s\n\noptions:\n", usages[cmd]);
	for (size_t i = 0; i < PS_ARRAY_LEN(opts); i++) {
		char left[64];

		if (!(opts[i].cmds & (1u << cmd)))
			continue;
		snprintf(left, sizeof(left), "%s%s%s", opts[i].name, opts[i].arg ? " " : "",
			 opts[i].arg ? opts[i].arg : "");
		fprintf(f, "  %-28s %s\n", left, opts[i].help);
	}
}

/* The command's row for an option (a name may have a row per command, with its own help);
 * else any row of that name, which the caller refuses for this command. */
static const struct opt *find_opt(enum ps_cmd_kind cmd, const char *name, size_t len)
{
	const struct opt *any = NULL;

	for (size_t i = 0; i < PS_ARRAY_LEN(opts); i++)
		if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len)) {
			if (opts[i].cmds & (1u << cmd))
				return &opts[i];
			any = any ? any : &opts[i];
		}
	return any;
}

static int apply_opt(const struct opt *op, const char *val, struct ps_opts *o)
{
	char *end;
	int layer;

	switch (op->kind) {
	case OPT_FLAG:
		*(bool *)((char *)o + op->off) = true;
		return 0;
	case OPT_STRING:
		*(const char **)((char *)o + op->off) = val;
		return 0;
	case OPT_OVERRIDE:
		o->override[op->index] = val;
		return 0;
	case OPT_INPUT:
		if (o->n_inputs >= PS_MAX_INPUTS) {
			ps_err("%s: at most %d inputs", op->name, PS_MAX_INPUTS);
			return -1;
		}
		o->inputs[o->n_inputs++] = val;
		return 0;
	case OPT_LONG:
		*(long *)((char *)o + op->off) = strtol(val, &end, 10);
		if (*val && !*end && *(long *)((char *)o + op->off) > 0)
			return 0;
		ps_err("%s: '%s' is not a positive integer", op->name, val);
		return -1;
	case OPT_LAYER:
		layer = ps_layer_from_name(val);
		if (layer < 0 || layer == PS_LAYER_CGROUP) {
			ps_err("%s: unknown layer '%s' (known: python, identity, landlock, seccomp, "
			       "namespaces)",
			       op->name, val);
			return -1;
		}
		o->layers_off |= 1u << layer;
		return 0;
	}
	return -1;
}

int ps_cli_parse(enum ps_cmd_kind cmd, int argc, char **argv, struct ps_opts *o)
{
	const char *positional = NULL;
	bool only_positional = false;

	memset(o, 0, sizeof(*o));
	o->policy = "default";
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq, *val = NULL;
		const struct opt *op;

		if (only_positional || a[0] != '-' || !strcmp(a, "-")) {
			if (positional) {
				ps_err("unexpected argument '%s' (only one %s)", a,
				       cmd == PS_CMD_EXEC || cmd == PS_CMD_LEARN ? "FILE" : "policy");
				return -1;
			}
			positional = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_positional = true;
			continue;
		}
		eq = strchr(a, '=');
		op = find_opt(cmd, a, eq ? (size_t)(eq - a) : strlen(a));
		if (!op || !(op->cmds & (1u << cmd))) {
			ps_err("unknown option '%s' (see --help)", a);
			return -1;
		}
		if (op->kind != OPT_FLAG) {
			if (eq) {
				val = eq + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				ps_err("%s: missing %s", op->name, op->arg);
				return -1;
			}
		} else if (eq) {
			ps_err("%s takes no value", op->name);
			return -1;
		}
		if (apply_opt(op, val, o) < 0)
			return -1;
	}
	if (o->help)
		return 0;
	if (cmd == PS_CMD_EXEC || cmd == PS_CMD_LEARN)
		o->file = positional;
	else if (cmd == PS_CMD_CHECK_POLICY && positional)
		o->policy = positional;
	else if (positional) {
		ps_err("unexpected argument '%s'", positional);
		return -1;
	}
	if ((cmd == PS_CMD_EXEC || cmd == PS_CMD_LEARN) && !o->file) {
		ps_err("%s: missing FILE (a path, or - for standard input)",
		       cmd == PS_CMD_EXEC ? "exec" : "learn");
		return -1;
	}
	return 0;
}
