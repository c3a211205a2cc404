/* `pysnip exec` and `pysnip check-policy`: policy, interpreter, one worker, one verdict. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "commands.h"
#include "policy/seccomp_profile.h"
#include "run/auditlog.h"
#include "http_client.h"
#include "libprobe.h"
#include "python/interp.h"
#include "run/outfiles.h"
#include "run/result.h"
#include "util/util.h"
#include "run/worker.h"

enum { SNIPPET_MAX = 256 << 20, STDIN_MAX = 256 << 20 };

static int read_input(const char *what, const char *path, size_t max, char **buf, size_t *len)
{
	int ret = !strcmp(path, "-") ? ps_read_fd(0, buf, len, max) : ps_read_file(path, buf, len);

	if (ret == -EFBIG || (ret == 0 && *len > max)) {
		ps_err("%s %s: larger than %zu MiB", what, path, max >> 20);
		return -1;
	}
	if (ret < 0) {
		ps_err("%s %s: %s", what, !strcmp(path, "-") ? "(stdin)" : path, strerror(-ret));
		return -1;
	}
	return 0;
}

/* Load the policy and apply command-line overrides. Exit status on failure. */
static int load_policy(const struct ps_opts *o, struct ps_policy *p)
{
	char err[512];

	if (ps_policy_load(o->policy, p, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		return PS_EXIT_USAGE;
	}
	if (o->seccomp_profile &&
	    ps_policy_set_seccomp_profile(p, o->seccomp_profile, err, sizeof(err)) < 0) {
		ps_err("--seccomp-profile: %s", err);
		ps_policy_free(p);
		return PS_EXIT_USAGE;
	}
	for (int i = 0; i < PS_OV_COUNT; i++) {
		if (!o->override[i])
			continue;
		if (ps_policy_override(p, ps_override_field((enum ps_override)i), o->override[i],
				       false, err, sizeof(err)) < 0) {
			ps_err("%s", err);
			return PS_EXIT_USAGE;
		}
	}
	return 0;
}

/* Print the verdict; a closed stdout is the host's failure, reported on stderr. */
static int emit(char *json)
{
	int ret = PS_EXIT_OK;

	if (!json) {
		ps_err("rendering the verdict: out of memory");
		return PS_EXIT_INTERNAL;
	}
	if (ps_write_all(1, json, strlen(json)) < 0 || ps_write_all(1, "\n", 1) < 0) {
		ps_err("writing the verdict to stdout: %s", strerror(errno));
		ret = PS_EXIT_INTERNAL;
	}
	free(json);
	return ret;
}

static void audit(struct ps_auditlog *log, const char *json);

static int fail_internal(const struct ps_opts *o, const struct ps_policy *p, const char *msg,
			 struct ps_auditlog *log)
{
	char *json = ps_verdict_internal_error(p, msg, o->pretty);

	ps_err("%s", msg);
	audit(log, json);
	emit(json);
	return PS_EXIT_INTERNAL;
}

/* --input [NAME=]PATH: NAME one path component (default: PATH's basename), PATH a regular
 * file we can read, no NAME twice. Exit status on failure. */
static int parse_inputs(const struct ps_opts *o, struct ps_file_in *in, char names[][256])
{
	for (int i = 0; i < o->n_inputs; i++) {
		const char *arg = o->inputs[i], *eq = strchr(arg, '=');
		const char *path = eq ? eq + 1 : arg, *base = strrchr(path, '/');
		const char *name = eq ? NULL : (base ? base + 1 : path);
		struct stat sb;

		if (eq && (size_t)(eq - arg) < 256)
			snprintf(names[i], 256, "%.*s", (int)(eq - arg), arg);
		else
			snprintf(names[i], 256, "%s", name && strlen(name) < 256 ? name : "");
		if (!names[i][0] || strchr(names[i], '/') || !strcmp(names[i], ".") ||
		    !strcmp(names[i], "..")) {
			ps_err("--input %s: NAME must be one path component (not empty, '.', '..' or "
			       "with '/')", arg);
			return PS_EXIT_USAGE;
		}
		if (stat(path, &sb) < 0 || access(path, R_OK) < 0) {
			ps_err("--input %s: %s", arg, strerror(errno));
			return PS_EXIT_USAGE;
		}
		if (!S_ISREG(sb.st_mode)) {
			ps_err("--input %s: not a regular file", arg);
			return PS_EXIT_USAGE;
		}
		for (int k = 0; k < i; k++)
			if (!strcmp(names[k], names[i])) {
				ps_err("--input %s: input/%s given twice", arg, names[i]);
				return PS_EXIT_USAGE;
			}
		/* a copy: the worker places its inputs after it overwrote its argument strings
		 * (the environment scrub), which o->inputs point into */
		in[i] = (struct ps_file_in){ .name = names[i], .path = strdup(path) };
		if (!in[i].path) {
			ps_err("--input %s: out of memory", arg);
			return PS_EXIT_INTERNAL;
		}
	}
	return 0;
}

static int check_output_dir(const char *dir)
{
	struct stat sb;

	if (!dir)
		return 0;
	if (stat(dir, &sb) < 0 && (errno != ENOENT || mkdir(dir, 0755) < 0 || stat(dir, &sb) < 0)) {
		ps_err("--output-dir %s: %s", dir, strerror(errno));
		return PS_EXIT_USAGE;
	}
	if (!S_ISDIR(sb.st_mode)) {
		ps_err("--output-dir %s: not a directory", dir);
		return PS_EXIT_USAGE;
	}
	return 0;
}

/* The run's audit line (--audit-log), once its verdict is rendered; never fatal. */
static void audit(struct ps_auditlog *log, const char *json)
{
	struct ps_audit_who who = { NULL, "local", NULL };
	char id[32];

	if (!log)
		return;
	ps_auditlog_new_id(id, sizeof(id));
	who.request_id = id;
	ps_auditlog_run(log, &who, -1, json);
}

static int run_one(const struct ps_opts *o, struct ps_policy *p, struct ps_run *r,
		   struct ps_auditlog *log)
{
	struct ps_strlist modules = { 0 };
	struct ps_interp_opts io = { 0 };
	struct ps_worker w;
	struct ps_outcome out;
	struct ps_outfiles files = { 0 };
	char err[512];
	char *json;
	int ret;

	if (ps_policy_modules(p, &modules, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		return PS_EXIT_USAGE;
	}
	io.policy = p;
	io.modules = &modules;
	io.python_layer = !(o->layers_off & (1u << PS_LAYER_PYTHON)) &&
			  p->layers[PS_LAYER_PYTHON] != PS_LAYER_OFF;
	/* One snippet: the worker initialises the interpreter itself (see ps_worker). */
	if (ps_interp_locate(err, sizeof(err)) < 0) {
		ps_strlist_free(&modules);
		return fail_internal(o, p, err, log);
	}
	if (ps_worker_prepare_oneshot(&w, p, o->layers_off, &io, err, sizeof(err)) < 0) {
		ps_strlist_free(&modules);
		if (!strncmp(err, "policy ", 7)) {
			ps_err("%s", err);
			return PS_EXIT_USAGE;
		}
		return fail_internal(o, p, err, log);
	}
	r->limits = p->limits;
	ps_supervise_catch_signals();
	ret = ps_worker_run(&w, r, &out);
	/* One run only: the PID namespace's init may go while the verdict is rendered. */
	if (w.ns_static)
		ps_ns_release_start();
	if (ret < 0 && !strncmp(out.host_error, "policy ", 7)) {
		ps_err("%s", out.host_error);
		ps_outcome_free(&out);
		ps_worker_release(&w);
		ps_strlist_free(&modules);
		return PS_EXIT_USAGE;
	}
	if (ret < 0 && !out.host_error[0])
		snprintf(out.host_error, sizeof(out.host_error), "worker: %s", strerror(-ret));
	json = ps_verdict_render_files(p, r, &out, o->pretty, &files);
	/* the files first: a verdict that lists them means they are there */
	if (o->output_dir && ps_outfiles_write(&files, o->output_dir, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		free(json);
		json = ps_verdict_internal_error(p, err, o->pretty);
		emit(json);
		ps_outfiles_free(&files);
		ps_outcome_free(&out);
		ps_worker_release(&w);
		ps_strlist_free(&modules);
		return PS_EXIT_INTERNAL;
	}
	ps_outfiles_free(&files);
	audit(log, json);
	ret = emit(json);
	if (ret == PS_EXIT_OK && (out.host_error[0] || out.phase_failed || !out.reaped))
		ret = PS_EXIT_INTERNAL;
	ps_outcome_free(&out);
	ps_worker_release(&w);
	ps_strlist_free(&modules);
	return ret;
}

int (*ps_exec_client)(const struct ps_opts *o, const char *code, size_t code_len, const char *in,
		      size_t in_len);

/* `exec --server`: the HTTP client lives in pysnip-serve, next to this binary. */
static int exec_via_serve(int argc, char **argv)
{
	ps_exec_sibling("pysnip-serve", "exec", argc, argv);
	return PS_EXIT_INTERNAL;
}

int ps_cmd_exec(int argc, char **argv)
{
	struct ps_opts o;
	struct ps_policy p;
	struct ps_run r = { 0 };
	static struct ps_file_in inputs[PS_MAX_INPUTS];
	static char names[PS_MAX_INPUTS][256];
	char *code = NULL, *in = NULL;
	size_t code_len = 0, in_len = 0;
	int ret;

	if (ps_cli_parse(PS_CMD_EXEC, argc, argv, &o) < 0)
		return PS_EXIT_USAGE;
	if (o.help) {
		ps_cli_usage(PS_CMD_EXEC, stdout);
		return PS_EXIT_OK;
	}
	if (o.output_dir && check_output_dir(o.output_dir))
		return PS_EXIT_USAGE;
	if (o.server && !ps_exec_client)	/* before anything reads our stdin */
		return exec_via_serve(argc, argv);
	if (o.seccomp_profile && o.server) {
		ps_err("--seccomp-profile: with --server, the server's policies decide (serve "
		       "--policy FILE naming the profile)");
		return PS_EXIT_USAGE;
	}
	if (o.audit_log && o.server) {
		ps_err("--audit-log: with --server, the server keeps the log (serve --audit-log)");
		return PS_EXIT_USAGE;
	}
	if (o.audit_log && !strcmp(o.audit_log, "-")) {
		ps_err("--audit-log -: standard output carries the verdict; name a file");
		return PS_EXIT_USAGE;
	}
	if (o.stdin_file && !strcmp(o.stdin_file, "-") && !strcmp(o.file, "-")) {
		ps_err("--stdin -: standard input already carries the snippet");
		return PS_EXIT_USAGE;
	}
	if (read_input("snippet", o.file, SNIPPET_MAX, &code, &code_len) < 0 ||
	    (o.stdin_file && read_input("--stdin", o.stdin_file, STDIN_MAX, &in, &in_len) < 0)) {
		free(code);
		return PS_EXIT_USAGE;
	}
	if (o.server) {
		ret = ps_exec_client(&o, code, code_len, in, in_len);
	} else if ((ret = load_policy(&o, &p)) == 0) {
		struct ps_auditlog *log = NULL;
		char err[512];

		if (!(ret = parse_inputs(&o, inputs, names)) &&
		    !(ret = check_output_dir(o.output_dir))) {
			r.inputs = inputs;
			r.n_inputs = (size_t)o.n_inputs;
			r.want_output = o.output_dir != NULL;
			r.code = code;
			r.code_len = code_len;
			r.stdin_data = in;
			r.stdin_len = in_len;
			if (o.audit_log && ps_auditlog_open(o.audit_log, &log, err, sizeof(err)) < 0) {
				ps_err("--audit-log: %s", err);
				ret = PS_EXIT_USAGE;
			} else {
				ret = run_one(&o, &p, &r, log);
			}
			ps_auditlog_close(log);
		}
		ps_policy_free(&p);
	}
	free(code);
	free(in);
	return ret;
}

static cJSON *strlist_json(const struct ps_strlist *l)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->items[i]));
	return a;
}

static void warn_list(const char *profile, bool warning, const char *what,
		      const struct ps_strlist *l)
{
	size_t used = 0;
	char names[2048];

	names[0] = '\0';
	for (size_t i = 0; i < l->n && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
					 l->items[i]);
	ps_err("%sprofile %s: %zu %s: %s", warning ? "warning: " : "", profile, l->n, what, names);
}

/* The resolved policy, and for a profile what of it pysnip did not take as written. */
static char *check_json(const struct ps_policy *p, const struct ps_filter_report *rep,
			bool pretty)
{
	char *text = ps_policy_to_json(p, false), *s;
	cJSON *root = text ? cJSON_Parse(text) : NULL, *o;

	free(text);
	if (!root)
		return NULL;
	if (p->seccomp_profile && (o = cJSON_AddObjectToObject(root, "seccomp_profile"))) {
		cJSON_AddStringToObject(o, "path", p->seccomp_profile_path);
		cJSON_AddNumberToObject(o, "entries", (double)p->seccomp_profile->nrules);
		cJSON_AddNumberToObject(o, "entries_not_for_this_host",
					(double)p->seccomp_profile->skipped);
		cJSON_AddItemToObject(o, "overridden", strlist_json(&rep->overridden));
		cJSON_AddItemToObject(o, "unknown_syscalls", strlist_json(&rep->unknown));
		cJSON_AddItemToObject(o, "other_architectures", strlist_json(&rep->foreign));
	}
	/* which BLAS numpy really loads, and the like (the scientific policy) */
	if (ps_strlist_has(&p->modules_allow, "numpy"))
		ps_libprobe_add(p, root);
	s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return s;
}

int ps_cmd_check_policy(int argc, char **argv)
{
	struct ps_opts o;
	struct ps_policy p;
	struct ps_strlist modules = { 0 };
	struct ps_filter_report rep = { 0 };
	struct ps_filter *f = NULL;
	char err[512];
	int ret;

	if (ps_cli_parse(PS_CMD_CHECK_POLICY, argc, argv, &o) < 0)
		return PS_EXIT_USAGE;
	if (o.help) {
		ps_cli_usage(PS_CMD_CHECK_POLICY, stdout);
		return PS_EXIT_OK;
	}
	ret = load_policy(&o, &p);
	if (ret)
		return ret;
	if (ps_policy_modules(&p, &modules, err, sizeof(err)) < 0 ||
	    ps_filter_build_report(&p, &f, &rep, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		ret = PS_EXIT_USAGE;
		goto out;
	}
	/* As runc and crun: names the library does not know are skipped, with a warning. */
	if (rep.unknown.n)
		warn_list(p.seccomp_profile_path, !o.strict,
			  o.strict ? "unknown syscalls (--strict)" : "unknown syscalls, ignored",
			  &rep.unknown);
	if (rep.unknown.n && o.strict) {
		ret = PS_EXIT_USAGE;
		goto out;
	}
	ret = emit(check_json(&p, &rep, o.pretty));
out:
	ps_filter_report_free(&rep);
	ps_filter_free(f);
	ps_strlist_free(&modules);
	ps_policy_free(&p);
	return ret;
}
