/* `pysnip learn [--policy BASE] FILE|-`: what does this snippet need beyond BASE?
 *
 * Rounds (learn_round.c) run the snippet with every layer on, the seccomp filter reporting
 * instead of killing (user notification, or SCMP_ACT_LOG and the kernel's audit records where
 * notification is refused or with --via log); each round's policy is BASE plus what the rounds before learned, until
 * a round learns nothing new. Learned: the syscalls that went on (named groups where every
 * syscall of a group was used, single syscalls otherwise; "threads" for a clone of a thread),
 * and what the Python layer refused: modules, paths (read first; write when read was not
 * enough), audit events. Printed on stdout as a policy that extends BASE; nothing is ever
 * widened by itself. What no policy may grant (syscalls pysnip never allows, arguments
 * outside its checks, dangerous modules and events) is listed on stderr as a warning and
 * never added: while learning, such a syscall failed with EPERM instead of running. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "learn.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscall_groups.h"
#include "util/util.h"

enum { MAX_ROUNDS = 10, THREAD_PROCESSES = 16 };

struct learned {
	struct ps_strlist syscalls, modules, read, write, audit;
	struct ps_strlist warnings;	/* seen, never added */
	bool threads;
};

/* Audit events no policy should be handed by a learning tool: processes, signals, the
 * network, native code. A person may still grant one, knowingly. */
static const char *const dangerous_events[] = {
	"os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "os.kill",
	"os.killpg", "subprocess.", "socket.", "ctypes.", "pty.", "mmap.", "sys.addaudithook",
	"os.add_dll_directory", "sys.setprofile", "sys.settrace", "sys._getframe",
	"object.__setattr__", "code.", "compile", "exec", "marshal.", "pickle.", "import",
	NULL,
};

static bool dangerous_event(const char *ev)
{
	for (const char *const *d = dangerous_events; *d; d++)
		if (!strncmp(ev, *d, strlen(*d)))
			return true;
	return false;
}

static void learned_free(struct learned *l)
{
	struct ps_strlist *lists[] = { &l->syscalls, &l->modules, &l->read, &l->write, &l->audit,
				       &l->warnings };

	for (size_t i = 0; i < PS_ARRAY_LEN(lists); i++)
		ps_strlist_free(lists[i]);
}

static int push_new(struct ps_strlist *l, const char *s, bool *changed)
{
	if (ps_strlist_has(l, s))
		return 0;
	*changed = true;
	return ps_strlist_push(l, s);
}

static int warn(struct learned *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct learned *l, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return ps_strlist_has(&l->warnings, line) ? 0 : ps_strlist_push(&l->warnings, line);
}

/* ---- one round's result into what was learned ---- */

static int take_syscalls(struct learned *l, const cJSON *round, bool *changed)
{
	const cJSON *e;

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(round, "threads")) && !l->threads) {
		l->threads = true;
		*changed = true;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(round, "syscalls")) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "refused"));

		if (!name || !why)
			continue;
		if (!strcmp(why, "never"))
			warn(l, "syscall %s: pysnip never allows it (it failed with EPERM while "
			     "learning); not added", name);
		else if (!strcmp(why, "arguments"))
			warn(l, "syscall %s: called with arguments outside pysnip's own check (it "
			     "failed with EPERM while learning); not added", name);
		else if (!strncmp(name, "syscall ", 8))
			warn(l, "%s: unknown to libseccomp; not added", name);
		else if (strcmp(name, "clone") && push_new(&l->syscalls, name, changed) < 0)
			return -1;
	}
	return 0;
}

/* A path the Python layer refused: readable first; writable if read was not enough. */
static int take_path(struct learned *l, const char *event, const char *path, bool *changed)
{
	if (path[0] != '/')
		return warn(l, "%s('%s'): not an absolute path; not added", event, path);
	if (!ps_strlist_has(&l->read, path))
		return push_new(&l->read, path, changed);
	if (!ps_strlist_has(&l->write, path)) {
		if (access(path, F_OK) < 0)
			warn(l, "%s('%s'): does not exist, and Landlock grants only existing paths: "
			     "to create it, grant its directory in filesystem.write", event, path);
		return push_new(&l->write, path, changed);
	}
	return warn(l, "%s('%s'): still refused with the path readable and writable; not added",
		    event, path);
}

static int take_denial(struct learned *l, const cJSON *d, const char *message, bool *changed)
{
	const char *layer = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "layer"));
	const char *event = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "event"));
	const char *detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "detail"));

	if (!layer || !event)
		return 0;
	detail = detail ? detail : "";
	if (!strcmp(layer, "import")) {
		if (message && strstr(message, "(not allowed)") && !ps_strlist_has(&l->modules, detail))
			return push_new(&l->modules, detail, changed);
		return warn(l, "import of '%s': %s; not added", detail,
			    message && strstr(message, "(dangerous)") ? "a dangerous module"
								       : "refused again");
	}
	if (!strcmp(layer, "audit") || !strcmp(layer, "landlock")) {
		if (detail[0] == '/' || !strcmp(event, "open"))
			return take_path(l, event, detail, changed);
		if (dangerous_event(event))
			return warn(l, "audit event %s('%s'): dangerous; not added", event, detail);
		if (ps_strlist_has(&l->audit, event))
			return warn(l, "audit event %s: refused again once allowed; not added", event);
		return push_new(&l->audit, event, changed);
	}
	return warn(l, "%s denial %s (%s): nothing a policy could grant was learned", layer, event,
		    detail);
}

static int take_round(struct learned *l, const cJSON *round, bool *changed)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(round, "verdict");
	const cJSON *exc = cJSON_GetObjectItemCaseSensitive(v, "exception");
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(exc, "message"));
	const cJSON *d;

	if (take_syscalls(l, round, changed) < 0)
		return -1;
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(v, "denials"))
		if (take_denial(l, d, msg, changed) < 0)
			return -1;
	return 0;
}

/* ---- the policy: BASE plus what was learned ---- */

static cJSON *list_plus(const cJSON *base, const struct ps_strlist *add)
{
	cJSON *a = base ? cJSON_Duplicate(base, true) : cJSON_CreateArray();

	for (size_t i = 0; a && i < add->n; i++) {
		bool have = false;
		const cJSON *e;

		cJSON_ArrayForEach(e, a)
			have |= cJSON_IsString(e) && !strcmp(e->valuestring, add->items[i]);
		if (!have)
			cJSON_AddItemToArray(a, cJSON_CreateString(add->items[i]));
	}
	return a;
}

/* A group joins when every syscall of it was learned; its members leave the single list. The
 * thread start-up calls come with "threads". */
static void split_groups(const struct ps_policy *base, const struct learned *l,
			 struct ps_strlist *groups, struct ps_strlist *singles)
{
	for (size_t i = 0; i < ps_syscall_groups_count; i++) {
		const struct ps_syscall_group *g = &ps_syscall_groups[i];
		bool all = true;

		if (ps_strlist_has(&base->syscall_groups, g->name))
			continue;
		for (const char *const *s = g->syscalls; *s && all; s++)
			all = ps_strlist_has(&l->syscalls, *s);
		if (all)
			ps_strlist_push(groups, g->name);
	}
	for (size_t i = 0; i < l->syscalls.n; i++) {
		const char *s = l->syscalls.items[i];
		bool grouped = false;

		for (size_t k = 0; k < groups->n && !grouped; k++)
			for (const char *const *m = ps_syscall_group_find(groups->items[k])->syscalls;
			     *m && !grouped; m++)
				grouped = !strcmp(*m, s);
		for (const char *const *m = ps_syscall_group_find("@threads")->syscalls;
		     l->threads && *m && !grouped; m++)
			grouped = !strcmp(*m, s);
		if (!grouped)
			ps_strlist_push(singles, s);
	}
}

static void set_in(cJSON *root, const char *section, const char *key, cJSON *v)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(root, section);

	if (!s)
		s = cJSON_AddObjectToObject(root, section);
	if (cJSON_GetObjectItemCaseSensitive(s, key))
		cJSON_ReplaceItemInObjectCaseSensitive(s, key, v);
	else
		cJSON_AddItemToObject(s, key, v);
}

static cJSON *get_in(cJSON *root, const char *section, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, section), key);
}

/* BASE resolved, as a policy file (no name, path or extends; a profile's path absolute). */
static cJSON *resolved(const struct ps_policy *base)
{
	char *text = ps_policy_to_json(base, false), abs[PATH_MAX];
	cJSON *root = text ? cJSON_Parse(text) : NULL, *prof;

	free(text);
	if (!root)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "path");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "extends");
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "description")))
		cJSON_DeleteItemFromObjectCaseSensitive(root, "description");
	prof = get_in(root, "seccomp", "profile");
	if (cJSON_IsString(prof) && realpath(prof->valuestring, abs))
		set_in(root, "seccomp", "profile", cJSON_CreateString(abs));
	return root;
}

/* The keys learning changed, each with BASE's list plus the learned items. */
static const struct {
	const char *section, *key;
	size_t off;
} learned_lists[] = {
	{ "modules", "allow", offsetof(struct learned, modules) },
	{ "filesystem", "read", offsetof(struct learned, read) },
	{ "filesystem", "write", offsetof(struct learned, write) },
	{ "audit", "allow", offsetof(struct learned, audit) },
};

/* full: a standalone policy (the rounds'); else {"extends": BASE, changed keys only}. */
static cJSON *learned_policy(const struct ps_policy *base, const struct learned *l, bool full)
{
	struct ps_strlist groups = { 0 }, singles = { 0 };
	cJSON *all = resolved(base), *out;

	if (!all)
		return NULL;
	out = full ? all : cJSON_CreateObject();
	if (!full) {
		cJSON_AddStringToObject(out, "extends", base->name);
		cJSON_AddStringToObject(out, "description", "learned by pysnip learn: review before use");
	}
	for (size_t i = 0; i < PS_ARRAY_LEN(learned_lists); i++) {
		const struct ps_strlist *add = (const void *)((const char *)l + learned_lists[i].off);

		if (add->n)
			set_in(out, learned_lists[i].section, learned_lists[i].key,
			       list_plus(get_in(all, learned_lists[i].section, learned_lists[i].key),
					 add));
	}
	split_groups(base, l, &groups, &singles);
	if (groups.n)
		set_in(out, "seccomp", "groups", list_plus(get_in(all, "seccomp", "groups"), &groups));
	if (singles.n)
		set_in(out, "seccomp", "allow", list_plus(get_in(all, "seccomp", "allow"), &singles));
	if (l->threads && !base->threads) {
		set_in(out, "seccomp", "threads", cJSON_CreateTrue());
		if (base->limits.processes < 2)
			set_in(out, "limits", "processes", cJSON_CreateNumber(THREAD_PROCESSES));
	}
	ps_strlist_free(&groups);
	ps_strlist_free(&singles);
	if (!full)
		cJSON_Delete(all);
	return out;
}

/* ---- the command ---- */

static int write_round_policy(const char *path, const struct ps_policy *base,
			      const struct learned *l)
{
	cJSON *o = learned_policy(base, l, true);
	char *text = o ? cJSON_Print(o) : NULL;
	FILE *f = text ? fopen(path, "w") : NULL;
	int rc = f && fputs(text, f) >= 0 ? 0 : -1;

	if (f && fclose(f))
		rc = -1;
	cJSON_Delete(o);
	free(text);
	return rc;
}

static void summary(const struct learned *l, int rounds, const cJSON *last)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(last, "verdict");
	const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "status"));
	const cJSON *exc = cJSON_GetObjectItemCaseSensitive(v, "exception");
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(exc, "type"));
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(exc, "message"));

	fprintf(stderr, "pysnip learn: %d round(s); the last ended '%s'", rounds, st ? st : "?");
	fprintf(stderr, "; learned %zu syscall(s), %zu module(s), %zu path(s), %zu audit "
		"event(s)%s\n", l->syscalls.n, l->modules.n, l->read.n + l->write.n, l->audit.n,
		l->threads ? ", threads" : "");
	for (size_t i = 0; i < l->warnings.n; i++)
		fprintf(stderr, "pysnip learn: warning: %s\n", l->warnings.items[i]);
	/* A kernel layer's refusal (Landlock's EACCES) has no denial to learn from: say so. */
	if (type && !strcmp(type, "PermissionError") && msg && strncmp(msg, "pysnip: ", 8))
		fprintf(stderr, "pysnip learn: warning: the last round ended with PermissionError "
			"'%s', which no layer reported as a denial: nothing was learned from it\n",
			msg);
}

/* Rounds until one learns nothing; then print. */
static int learn(const struct ps_opts *o, const struct ps_policy *base,
		 const struct ps_learn_input *in, const char *dir)
{
	struct learned l = { 0 };
	char path[PATH_MAX], err[512];
	cJSON *round = NULL, *out;
	int ret = PS_EXIT_INTERNAL, rounds = 0;
	bool changed = true;
	char *text;

	snprintf(path, sizeof(path), "%s/learning.json", dir);
	while (changed && rounds < MAX_ROUNDS) {
		changed = false;
		cJSON_Delete(round);
		round = NULL;
		if (write_round_policy(path, base, &l) < 0) {
			ps_err("learn: writing %s: %s", path, strerror(errno));
			goto out;
		}
		if (ps_learn_round(path, in, &round, err, sizeof(err)) < 0) {
			ps_err("%s", err);
			ret = !strncmp(err, "policy ", 7) ? PS_EXIT_USAGE : PS_EXIT_INTERNAL;
			goto out;
		}
		rounds++;
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(round, "listener"))) {
			ps_err("learn: the worker never handed its seccomp listener over (a phase "
			       "failed before it?): %s", cJSON_PrintUnformatted(round));
			goto out;
		}
		if (take_round(&l, round, &changed) < 0) {
			ps_err("learn: out of memory");
			goto out;
		}
	}
	out = learned_policy(base, &l, base->extends != NULL);
	if (out && base->extends) {	/* whole: say where it came from */
		char desc[256];

		snprintf(desc, sizeof(desc), "learned by pysnip learn from '%s' (which extends "
			 "'%s'): review before use", base->name, base->extends);
		cJSON_DeleteItemFromObjectCaseSensitive(out, "description");
		cJSON_AddStringToObject(out, "description", desc);
	}
	text = out ? (o->pretty ? cJSON_Print(out) : cJSON_PrintUnformatted(out)) : NULL;
	cJSON_Delete(out);
	if (!text) {
		ps_err("learn: rendering the policy: out of memory");
		goto out;
	}
	printf("%s\n", text);
	free(text);
	summary(&l, rounds, round);
	if (base->extends)
		fprintf(stderr, "pysnip learn: '%s' extends '%s' (one level only): the policy above "
			"is whole, not a child of it\n", base->name, base->extends);
	if (changed)
		fprintf(stderr, "pysnip learn: stopped after %d rounds, still learning\n", rounds);
	ret = fflush(stdout) == 0 ? PS_EXIT_OK : PS_EXIT_INTERNAL;
out:
	cJSON_Delete(round);
	learned_free(&l);
	return ret;
}

int ps_cmd_learn(int argc, char **argv)
{
	struct ps_learn_input in = { 0 };
	struct ps_policy base;
	struct ps_opts o;
	char err[512], dir[] = "/tmp/pysnip-learn-XXXXXX", *code = NULL, *data = NULL, path[64];
	int ret;

	if (ps_cli_parse(PS_CMD_LEARN, argc, argv, &o) < 0)
		return PS_EXIT_USAGE;
	if (o.help) {
		ps_cli_usage(PS_CMD_LEARN, stdout);
		return PS_EXIT_OK;
	}
	if (ps_policy_load(o.policy, &base, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		return PS_EXIT_USAGE;
	}
	if (o.learn_via && strcmp(o.learn_via, "notify") && strcmp(o.learn_via, "log")) {
		ps_err("--via: '%s' is not notify or log", o.learn_via);
		ps_policy_free(&base);
		return PS_EXIT_USAGE;
	}
	in.via = o.learn_via && !strcmp(o.learn_via, "log") ? PS_LEARN_LOG : PS_LEARN_NOTIFY;
	/* No user notification here (kernel or libseccomp too old): SCMP_ACT_LOG instead. */
	if (in.via == PS_LEARN_NOTIFY && !ps_notify_available()) {
		fprintf(stderr, "pysnip learn: no seccomp user notification here; learning from "
			"the kernel's audit records (SCMP_ACT_LOG)\n");
		in.via = PS_LEARN_LOG;
	}
	ret = !strcmp(o.file, "-") ? ps_read_fd(0, &code, &in.code_len, 256 << 20)
				   : ps_read_file(o.file, &code, &in.code_len);
	if (ret < 0) {
		ps_err("learn: %s: %s", o.file, strerror(-ret));
		ret = PS_EXIT_USAGE;
	} else if (o.stdin_file && (ret = ps_read_file(o.stdin_file, &data, &in.stdin_len)) < 0) {
		ps_err("learn: --stdin %s: %s", o.stdin_file, strerror(-ret));
		ret = PS_EXIT_USAGE;
	} else if (!mkdtemp(dir)) {
		ps_err("learn: mkdtemp(/tmp/pysnip-learn-XXXXXX): %s", strerror(errno));
		ret = PS_EXIT_INTERNAL;
	} else {
		in.code = code;
		in.stdin_data = data;
		in.layers_off = o.layers_off;
		ret = learn(&o, &base, &in, dir);
		snprintf(path, sizeof(path), "%s/learning.json", dir);
		unlink(path);
		rmdir(dir);
	}
	free(code);
	free(data);
	ps_policy_free(&base);
	return ret;
}
