/* The Python layer: a C audit hook (added before Py_Initialize, so nothing runs unhooked) and
 * the import allowlist. It gives clean, attributable errors; it is not the security boundary
 * (the kernel layers are: CPython's own docs say audit hooks cannot be a sandbox).
 *
 * Imports are decided by the module, not by who asks: the snippet may import its allowlist;
 * anyone (the stdlib included, so no confused deputy can widen it) may import the allowlist's
 * closure, what importing the allowed modules loads (pyshim/closure.py, made at build time);
 * the dangerous modules below are refused to everyone. The check runs where a module is found
 * (__import__ wrapper, a sys.meta_path finder) and again where it is loaded (the "import" and
 * "exec" audit events, the _imp guards in pyguard.c), so removing the finder or driving a
 * loader by hand does not get past it. Frame origin (stdlib, lib-dynload, policy paths, frozen,
 * pyshim vs snippet) still decides code-creation powers: compile() with a trusted-looking
 * filename, code.__new__ and marshal.loads outside importlib are denied to snippet code. */
#include "audit_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/util.h"

/* ---- the hook: each event to the check of its family (audit_paths.c, audit_import.c,
 * audit_code.c) or denied outright here ---- */

/* Denied outright; the detail is the first argument when it is a path or command. */
static int ev_deny(const char *ev, PyObject *args)
{
	char buf[256];
	int fd;
	PyObject *a = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	if (a && (PyUnicode_Check(a) || PyBytes_Check(a)) &&
	    audit_path_arg(a, buf, sizeof(buf), &fd) == PATH_STR)
		return audit_deny(ev, buf);
	PyErr_Clear();
	return audit_deny(ev, "");
}

static int ev_kill(const char *ev, PyObject *args)
{
	PyObject *pid = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	long p = pid && PyLong_Check(pid) ? PyLong_AsLong(pid) : -1;
	PyErr_Clear();
	if (p == (long)getpid())
		return 0;
	char d[32];
	snprintf(d, sizeof(d), "%ld", p);
	return audit_deny(ev, d);
}

struct event_rule {
	const char *name;	/* exact, or a prefix ending in '.' */
	int (*check)(const char *ev, PyObject *args);
};

/* Sorted by nothing in particular; prefixes end in '.'. */
static const struct event_rule rules[] = {
	{ "open", ev_open },
	{ "import", ev_import },
	{ "exec", ev_exec },
	{ "os.listdir", ev_read0 },
	{ "os.scandir", ev_read0 },
	{ "os.chdir", ev_read0 },
	{ "os.getxattr", ev_read0 },
	{ "os.listxattr", ev_read0 },
	{ "os.fwalk", ev_read0 },
	{ "os.walk", ev_read0 },
	{ "os.mkdir", ev_write0_fd2 },
	{ "os.rmdir", ev_write0_fd1 },
	{ "os.remove", ev_write0_fd1 },
	{ "os.chmod", ev_write0_fd2 },
	{ "os.chown", ev_write0_fd3 },
	{ "os.utime", ev_write0_fd3 },
	{ "os.truncate", ev_write0 },
	{ "os.setxattr", ev_write0 },
	{ "os.removexattr", ev_write0 },
	{ "os.rename", ev_write_two },
	{ "os.link", ev_write_two },
	{ "os.symlink", ev_symlink },
	{ "os.kill", ev_kill },
	{ "os.killpg", ev_kill },
	{ "os.system", ev_deny },
	{ "os.exec", ev_deny },
	{ "os.posix_spawn", ev_deny },
	{ "os.spawn", ev_deny },
	{ "os.fork", ev_deny },
	{ "os.forkpty", ev_deny },
	{ "os.startfile", ev_deny },
	{ "subprocess.Popen", ev_deny },
	{ "pty.spawn", ev_deny },
	{ "socket.", ev_deny },
	{ "ctypes.dlopen", ev_ctypes_dlopen },
	{ "ctypes.", ev_deny },
	{ "mmap.", ev_deny },
	{ "fcntl.", ev_deny },
	{ "resource.", ev_deny },
	{ "syslog.", ev_deny },
	{ "webbrowser.open", ev_deny },
	{ "sqlite3.enable_load_extension", ev_deny },
	{ "sqlite3.load_extension", ev_deny },
	{ "gc.get_objects", ev_deny },
	{ "gc.get_referrers", ev_deny },
	{ "gc.get_referents", ev_deny },
	{ "code.__new__", ev_code_new },
	{ "sys.settrace", ev_untrusted_caller },
	{ "sys.setprofile", ev_untrusted_caller },
	{ "sys.addaudithook", ev_deny },
	{ "sys._current_frames", ev_untrusted_caller },
	{ "function.__new__", ev_untrusted_caller },
	{ "cpython.PyInterpreterState_New", ev_deny },
	{ "marshal.loads", ev_marshal },
	{ "marshal.load", ev_marshal },
	{ "compile", ev_compile },
};

static bool rule_matches(const char *rule, const char *event)
{
	size_t n = strlen(rule);
	if (rule[n - 1] == '.')
		return strncmp(event, rule, n) == 0;
	return strcmp(event, rule) == 0;
}

/* policy audit.allow: exact names, or "prefix.*" */
static bool granted(const char *event)
{
	for (size_t i = 0; i < aud.n_audit_allow; i++) {
		const char *a = aud.audit_allow[i];
		size_t n = strlen(a);
		if (n >= 2 && strcmp(a + n - 2, ".*") == 0) {
			if (strncmp(event, a, n - 1) == 0)
				return true;
		} else if (strcmp(event, a) == 0) {
			return true;
		}
	}
	return false;
}

/* The first characters of the rules' names (ps_audit_install): most events are none of
 * them (matplotlib drawing one figure raises "builtins.id" 3,756 times) and go without the
 * walk of the table. */
static uint64_t rule_first[4];

static bool first_char_has_rule(unsigned char c)
{
	return rule_first[c >> 6] >> (c & 63) & 1;
}

static int hook(const char *event, PyObject *args, void *data)
{
	if (!aud.active || aud.depth > 0 || !first_char_has_rule((unsigned char)event[0]))
		return 0;
	for (size_t i = 0; i < PS_ARRAY_LEN(rules); i++) {
		if (!rule_matches(rules[i].name, event))
			continue;
		if (granted(event))
			return 0;
		aud.depth++;
		int r = rules[i].check(event, args);
		aud.depth--;
		return r;
	}
	return 0;
}

int ps_audit_install(void)
{
	if (aud.installed)
		return 0;
	aud.installed = true;
	for (size_t i = 0; i < PS_ARRAY_LEN(rules); i++) {
		unsigned char f = (unsigned char)rules[i].name[0];

		rule_first[f >> 6] |= (uint64_t)1 << (f & 63);
	}
	return PySys_AddAuditHook(hook, NULL);
}

static char **copy_list(const struct ps_strlist *l, size_t *n)
{
	char **v = calloc(l && l->n ? l->n : 1, sizeof(char *));
	*n = 0;
	for (size_t i = 0; v && l && i < l->n; i++)
		if (!(v[(*n)++] = strdup(l->items[i])))
			return NULL;
	return v;
}

int ps_audit_configure(const struct ps_interp_opts *o, const char *stdlib_dir,
		       const char *dynload_dir, char *err, size_t errlen)
{
	const struct ps_policy *p = o->policy;
	aud.policy = p && p->name ? p->name : "default";
	int r = 0;
	/* trusted.items[0] must be the stdlib (import_machinery relies on it) */
	r |= audit_set_add(&aud.trusted, stdlib_dir);
	r |= audit_set_add(&aud.trusted, dynload_dir);
	r |= audit_set_add(&aud.readable, stdlib_dir);
	r |= audit_set_add(&aud.readable, dynload_dir);
	static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/urandom",
					       "/dev/random" };
	for (size_t i = 0; i < PS_ARRAY_LEN(devices); i++)
		r |= audit_set_add(&aud.readable, devices[i]);
	r |= audit_set_add(&aud.writable, "/dev/null");
	for (size_t i = 0; p && i < p->python_paths.n; i++) {
		r |= audit_set_add(&aud.trusted, p->python_paths.items[i]);
		r |= audit_set_add(&aud.readable, p->python_paths.items[i]);
	}
	for (size_t i = 0; p && i < p->read_paths.n; i++)
		r |= audit_set_add(&aud.readable, p->read_paths.items[i]);
	for (size_t i = 0; p && i < p->write_paths.n; i++)
		r |= audit_set_add(&aud.writable, p->write_paths.items[i]);
	if (r) {
		snprintf(err, errlen, "audit: too many paths (at most %d a kind)", MAX_PATHS);
		return -1;
	}
	aud.modules = copy_list(o->modules, &aud.n_modules);
	aud.audit_allow = copy_list(p ? &p->audit_allow : NULL, &aud.n_audit_allow);
	aud.internal = copy_list(p ? &p->modules_internal : NULL, &aud.n_internal);
	aud.stdlib_names = PySys_GetObject("stdlib_module_names");	/* borrowed, immortal */
	if (!aud.modules || !aud.audit_allow || !aud.internal || !aud.stdlib_names) {
		snprintf(err, errlen, "audit: out of memory");
		return -1;
	}
	qsort(aud.modules, aud.n_modules, sizeof(char *), audit_cmp_str);
	qsort(aud.internal, aud.n_internal, sizeof(char *), audit_cmp_str);
	Py_INCREF(aud.stdlib_names);
	aud.import_error = PyErr_NewExceptionWithDoc(
		"pysnip.PolicyImportError", "An import the pysnip policy denies.",
		PyExc_ModuleNotFoundError, NULL);
	aud.pathlib_name = PyUnicode_InternFromString("pathlib");
	if (!aud.import_error || !aud.pathlib_name) {
		PyErr_Clear();
		snprintf(err, errlen, "audit: PyErr_NewException(PolicyImportError) failed");
		return -1;
	}
	return 0;
}

void ps_audit_activate(void)
{
	aud.active = true;
}

void ps_audit_set_scratch(const char *dir)
{
	if (!realpath(dir, aud.scratch))
		snprintf(aud.scratch, sizeof(aud.scratch), "%s", dir);
}

void ps_audit_protect_fd(int fd)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(aud.protected_fds); i++) {
		if (aud.protected_fds[i] == fd)
			return;
		if (aud.protected_fds[i] < 0) {
			aud.protected_fds[i] = fd;
			return;
		}
	}
}

