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
#include "closure.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <frameobject.h>

#include "policy/policy.h"
#include "util/util.h"

struct ps_audit_state aud = { .protected_fds = { -1, -1, -1, -1 } };

/* Dangerous whatever imports them: process creation, sockets, raw memory and native code,
 * resource and terminal control, host account databases, test-only C modules. */
static const char *const denied_modules[] = {
	"_crypt", "_ctypes", "_ctypes_test", "_curses", "_curses_panel", "_dbm", "_gdbm",
	"_lsprof", "_multiprocessing", "_posixshmem", "_posixsubprocess", "_socket", "_ssl",
	"_testbuffer", "_testcapi", "_testclinic", "_testimportmultiple", "_testinternalcapi",
	"_testmultiphase", "_xxsubinterpreters", "_xxtestfuzz", "crypt", "ctypes", "curses",
	"faulthandler", "fcntl", "grp", "mmap", "multiprocessing", "nis", "ossaudiodev", "pty",
	"pwd", "readline", "resource", "socket", "spwd", "ssl", "subprocess", "syslog", "termios",
	"xxlimited", "xxlimited_35", "xxsubtype",
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool ps_audit_denied_module(const char *name)
{
	const char *key = name;
	return bsearch(&key, denied_modules, PS_ARRAY_LEN(denied_modules), sizeof(char *),
		       cmp_str) != NULL;
}

/* "a.b.c" is denied if "a", "a.b" or "a.b.c" is; allowed if any of them is listed. */
static bool module_match(const char *name, bool (*in)(const char *))
{
	char buf[256];
	size_t n = strlen(name);
	if (n >= sizeof(buf))
		return in == ps_audit_denied_module;	/* absurd names: deny, never allow */
	memcpy(buf, name, n + 1);
	for (;;) {
		if (in(buf))
			return true;
		char *dot = strrchr(buf, '.');
		if (!dot)
			return false;
		*dot = '\0';
	}
}

static bool in_allowlist(const char *name)
{
	const char *key = name;
	return aud.n_modules &&
	       bsearch(&key, aud.modules, aud.n_modules, sizeof(char *), cmp_str) != NULL;
}

static bool in_closure(const char *name)
{
	const char *key = name;
	long idx;

	if (!aud.closure_bits)
		return false;
	idx = ps_closure_name_index(name);
	if (idx >= 0)
		return aud.closure_bits[idx];
	return aud.n_closure_extra && bsearch(&key, aud.closure_extra, aud.n_closure_extra,
					      sizeof(char *), cmp_str) != NULL;
}

/* The C modules behind an allowed module that C code imports on the snippet's behalf
 * (io.open_code imports _io): allowed as their public face is. */
static const char *const aliases[][2] = { { "_io", "io" } };

/* strict: the snippet itself asks, so only the allowlist counts. Otherwise (the stdlib, the
 * import machinery) the closure of the allowlist counts too: what the allowed modules import. */
static bool module_allowed(const char *name, bool strict)
{
	if (module_match(name, in_allowlist))
		return true;
	for (size_t i = 0; i < PS_ARRAY_LEN(aliases); i++)
		if (strcmp(name, aliases[i][0]) == 0 && module_match(aliases[i][1], in_allowlist))
			return true;
	if (strict)
		return false;
	/* codecs are looked up lazily by name (str.encode('idna')): tables, nothing more */
	if (strncmp(name, "encodings", 9) == 0 && (name[9] == '\0' || name[9] == '.'))
		return true;
	return in_closure(name);
}

bool audit_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	if (n == 1 && prefix[0] == '/')
		return true;
	return strncmp(path, prefix, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool audit_in_set(const struct path_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (audit_under(path, s->items[i]))
			return true;
	return false;
}

static int set_add(struct path_set *s, const char *path)
{
	char real[PATH_MAX];
	if (s->n == MAX_PATHS)
		return -1;
	s->items[s->n] = strdup(realpath(path, real) ? real : path);
	if (!s->items[s->n])
		return -1;
	s->n++;
	return 0;
}

/* ---- frames ---- */

static const char *code_filename(PyFrameObject *f)
{
	PyCodeObject *co = PyFrame_GetCode(f);
	const char *s = PyUnicode_AsUTF8(co->co_filename);
	Py_DECREF(co);	/* the frame keeps the code (and its filename) alive */
	if (!s)
		PyErr_Clear();
	return s ? s : "";
}

static bool trusted_filename(const char *fn)
{
	if (strncmp(fn, "<frozen ", 8) == 0 || strncmp(fn, "<pysnip:", 8) == 0)
		return true;
	return fn[0] == '/' && audit_in_set(&aud.trusted, fn);
}

static bool import_machinery(const char *fn)
{
	if (strncmp(fn, "<frozen importlib.", 18) == 0)
		return true;
	return aud.trusted.n && audit_under(fn, aud.trusted.items[0]) &&
	       strncmp(fn + strlen(aud.trusted.items[0]), "/importlib/", 11) == 0;
}

/* The innermost frame outside the import machinery decides who imports. No frame at all means
 * the host's own C code (init, pyshim setup): trusted. */
/* The innermost frame whose code's filename pred accepts (a new reference), or NULL. */
static PyFrameObject *find_frame(bool (*pred)(const char *filename))
{
	PyFrameObject *f = PyEval_GetFrame();
	Py_XINCREF(f);
	while (f && !pred(code_filename(f))) {
		PyFrameObject *back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	return f;
}

static bool any_frame(const char *filename)
{
	return true;
}

static bool outside_import_machinery(const char *filename)
{
	return !import_machinery(filename);
}

static bool snippet_frame(const char *filename)
{
	return strcmp(filename, "<snippet>") == 0;
}

static bool origin_trusted(bool skip_importlib)
{
	PyFrameObject *f = find_frame(skip_importlib ? outside_import_machinery : any_frame);
	bool trusted = !f || trusted_filename(code_filename(f));
	Py_XDECREF(f);
	return trusted;
}

static bool caller_is_importlib(void)
{
	PyFrameObject *f = PyEval_GetFrame();
	return f && strncmp(code_filename(f), "<frozen importlib.", 18) == 0;
}

static int snippet_line(void)
{
	PyFrameObject *f = find_frame(snippet_frame);
	int line = f ? PyFrame_GetLineNumber(f) : -1;
	Py_XDECREF(f);
	return line;
}

/* ---- denials ---- */

void audit_record(const char *layer, const char *event, const char *detail)
{
	if (aud.n_denials == MAX_DENIALS)
		return;
	struct denial *d = &aud.denials[aud.n_denials++];
	snprintf(d->layer, sizeof(d->layer), "%s", layer);
	snprintf(d->event, sizeof(d->event), "%s", event);
	snprintf(d->detail, sizeof(d->detail), "%s", detail);
	d->line = snippet_line();
}


int audit_deny(const char *event, const char *detail)
{
	audit_record("audit", event, detail);
	if (detail[0])
		PyErr_Format(PyExc_PermissionError, "pysnip: %s('%s') denied by policy '%s'", event,
			     detail, aud.policy);
	else
		PyErr_Format(PyExc_PermissionError, "pysnip: %s denied by policy '%s'", event,
			     aud.policy);
	audit_remember_raised();
	return -1;
}

int ps_audit_deny(const char *event, const char *detail)
{
	return audit_deny(event, detail);
}

void ps_audit_denials_reset(void)
{
	aud.n_denials = 0;
}

size_t ps_audit_denial_count(void)
{
	return aud.n_denials;
}

PyObject *ps_audit_denials(PyObject *self, PyObject *unused)
{
	PyObject *list = PyList_New(0);
	for (size_t i = 0; list && i < aud.n_denials; i++) {
		struct denial *d = &aud.denials[i];
		PyObject *t = d->line >= 0 ?
			Py_BuildValue("(sssi)", d->layer, d->event, d->detail, d->line) :
			Py_BuildValue("(sssO)", d->layer, d->event, d->detail, Py_None);
		if (!t || PyList_Append(list, t) < 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
	}
	return list;
}

/* ---- imports ---- */

/* Remember an exception the hook raised, so the report can tell it from a look-alike. */
void audit_remember_raised(void)
{
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (v) {
		size_t i = aud.n_raised++ % MAX_RAISED;
		Py_XSETREF(aud.raised[i], Py_NewRef(v));
	}
	PyErr_Restore(t, v, tb);
}

bool ps_audit_raised_by_hook(PyObject *exc)
{
	for (size_t i = 0; exc && i < MAX_RAISED; i++)
		if (aud.raised[i] == exc)
			return true;
	return false;
}

static int raise_import_error(const char *name, const char *why)
{
	PyObject *msg = PyUnicode_FromFormat("pysnip: import of '%s' denied by policy '%s' (%s)",
					     name, aud.policy, why);
	PyObject *mod = PyUnicode_FromString(name);
	if (msg && mod) {
		PyObject *exc = PyObject_CallFunctionObjArgs(aud.import_error, msg, NULL);
		if (exc) {
			PyObject_SetAttrString(exc, "name", mod);
			PyErr_SetObject(aud.import_error, exc);
			Py_DECREF(exc);
		}
	}
	Py_XDECREF(msg);
	Py_XDECREF(mod);
	if (!PyErr_Occurred())
		PyErr_NoMemory();
	audit_remember_raised();
	return -1;
}

/* The rule is about the module, not about who imports it: the snippet may import its
 * allowlist; anyone (the stdlib included, so no confused deputy helps) may load the closure
 * of that allowlist; the dangerous modules nobody may. Who asks only picks between the two
 * sets, and decides whether refusing a dangerous module is the snippet's denial or the stdlib
 * probing for an optional one (pdb for readline), which sees it absent as on a platform
 * without it.
 *
 * load: the module exists and is being created or run (exec of its code, create_dynamic,
 * _imp guards). Otherwise it is only looked up (finder, __import__), and a lookup by the
 * stdlib passes unless dangerous: a probe for a module that does not exist here (pickle's
 * org.python.core) must find nothing, not a denial; one that does exist is checked when it
 * loads. via_import_func: called through builtins.__import__, whose innermost importlib
 * frame is the machinery serving its own needs. */
static int check_import(const char *name, int level, bool via_import_func, bool load)
{
	if (!aud.active)
		return 0;
	const char *why = NULL;
	bool trusted = (via_import_func && caller_is_importlib()) || origin_trusted(true);
	const char *last = strrchr(name, '.');
	/* the last component too: an extension's init symbol comes from it (x._ctypes) */
	if (module_match(name, ps_audit_denied_module) ||
	    (last && ps_audit_denied_module(last + 1)))
		why = "dangerous";
	else if (trusted && !load)
		why = NULL;
	else if (strcmp(name, "__main__") != 0 && level == 0 && !module_allowed(name, !trusted))
		why = "not allowed";
	else if (level > 0 && !trusted)
		why = "not allowed";
	if (!why)
		return 0;
	bool probe = trusted && strcmp(why, "dangerous") == 0;
	if (!probe)
		audit_record("import", "import", name);
	if (load && !probe) {
		/* past the finders (a module loaded by hand, a deputy's import): not an
		 * ImportError that `except ImportError` would quietly absorb */
		PyErr_Format(PyExc_PermissionError,
			     "pysnip: import of '%s' denied by policy '%s' (%s)", name, aud.policy, why);
		audit_remember_raised();
		return -1;
	}
	return raise_import_error(name, why);
}

int ps_audit_check_module(const char *name)
{
	return check_import(name, 0, false, true);
}

static PyObject *import_wrapper(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "globals", "locals", "fromlist", "level", NULL };
	PyObject *name, *globals = NULL, *locals = NULL, *fromlist = NULL;
	int level = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|OOOi:__import__", kwlist, &name, &globals,
					 &locals, &fromlist, &level))
		return NULL;
	const char *s = PyUnicode_AsUTF8(name);
	if (!s || check_import(s, level, true, false) < 0)
		return NULL;
	return PyObject_Call(aud.orig_import, args, kw);
}

static PyObject *finder_find_spec(PyObject *self, PyObject *args)
{
	PyObject *name, *path = NULL, *target = NULL;
	if (!PyArg_ParseTuple(args, "U|OO:find_spec", &name, &path, &target))
		return NULL;
	const char *s = PyUnicode_AsUTF8(name);
	if (!s || check_import(s, 0, false, false) < 0)
		return NULL;
	Py_RETURN_NONE;	/* allowed: the next finder does the work */
}

static PyMethodDef import_def = { "__import__", (PyCFunction)(void (*)(void))import_wrapper,
				  METH_VARARGS | METH_KEYWORDS,
				  "__import__ under the pysnip import policy" };
static PyMethodDef find_spec_def = { "find_spec", finder_find_spec, METH_VARARGS,
				     "deny imports outside the pysnip policy" };

PyObject *ps_audit_import_func(PyObject *orig_import)
{
	Py_XSETREF(aud.orig_import, Py_NewRef(orig_import));
	/* no __self__: the snippet reaches no module object through it */
	return PyCFunction_NewEx(&import_def, NULL, NULL);
}

PyObject *ps_audit_finder(void)
{
	PyObject *m = PyModule_New("pysnip_finder");
	PyObject *f = PyCFunction_NewEx(&find_spec_def, NULL, NULL);
	if (!m || !f || PyModule_AddObject(m, "find_spec", f) < 0) {
		Py_XDECREF(f);
		Py_XDECREF(m);
		return NULL;
	}
	return m;
}

/* ---- events ---- */

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

/* The module a file is, by its path under a trusted directory (stdlib/json/decoder.py ->
 * json.decoder, lib-dynload/_socket.cpython-311-x86_64-linux-gnu.so -> _socket). False when
 * the file is not under one (the snippet's own code, scratch modules: not the stdlib). */
static bool module_of_file(const char *fn, char *out, size_t n)
{
	if (strncmp(fn, "<frozen ", 8) == 0) {
		snprintf(out, n, "%.*s", (int)(strlen(fn + 8) ? strlen(fn + 8) - 1 : 0), fn + 8);
		return out[0] != '\0';
	}
	for (size_t i = aud.trusted.n; i-- > 0;) {	/* lib-dynload before the stdlib around it */
		const char *dir = aud.trusted.items[i];
		if (fn[0] != '/' || !audit_under(fn, dir) || fn[strlen(dir)] != '/')
			continue;
		const char *rel = fn + strlen(dir) + 1;
		if (i == 1) {	/* lib-dynload: the stem names the module (init symbol PyInit_stem) */
			snprintf(out, n, "%.*s", (int)strcspn(rel, "."), rel);
			return true;
		}
		snprintf(out, n, "%s", rel);
		char *dot = strrchr(out, '.');
		if (dot && strchr(dot, '/') == NULL)
			*dot = '\0';
		size_t len = strlen(out);
		if (len >= 9 && strcmp(out + len - 9, "/__init__") == 0)
			out[len - 9] = '\0';
		for (char *p = out; *p; p++)
			if (*p == '/')
				*p = '.';
		return i == 0;	/* policy python paths: third-party trees, not the stdlib's closure */
	}
	return false;
}

static int ev_import(const char *ev, PyObject *args)
{
	PyObject *name = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *file = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		PyErr_Clear();
		return 0;
	}
	bool has_file = PyTuple_GET_SIZE(args) > 1 && PyTuple_GET_ITEM(args, 1) != Py_None;
	if (check_import(s, 0, false, has_file) < 0)
		return -1;
	/* _imp.create_dynamic: the file decides what gets loaded, whatever the name says */
	const char *f = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
	char real[PATH_MAX], mod[256] = "";
	if (!f) {
		PyErr_Clear();
		return 0;
	}
	if (!realpath(f, real))
		snprintf(real, sizeof(real), "%s", f);
	bool std = module_of_file(real, mod, sizeof(mod));
	if (!std && !audit_in_set(&aud.trusted, real)) {
		audit_record("import", "import", f);
		return raise_import_error(f, "not a module of the stdlib or the policy's paths");
	}
	return std && mod[0] ? check_import(mod, 0, false, true) : 0;
}

/* Code about to run: a module body (or any code object) whose file is in the stdlib counts as
 * that module being imported, however it was loaded (SourceFileLoader by hand, importlib's
 * pure-Python __import__ with the finder removed, source_to_code under a stdlib name). */
static int ev_exec(const char *ev, PyObject *args)
{
	PyObject *co = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	char mod[256];
	if (!co || !PyCode_Check(co))
		return 0;
	const char *fn = PyUnicode_AsUTF8(((PyCodeObject *)co)->co_filename);
	if (!fn) {
		PyErr_Clear();
		return 0;
	}
	if (!module_of_file(fn, mod, sizeof(mod)))
		return 0;
	return check_import(mod, 0, false, true);
}

/* marshal data becomes code: only the import system may do that. */
static int ev_marshal(const char *ev, PyObject *args)
{
	return caller_is_importlib() ? 0 : audit_deny(ev, "");
}

/* A trusted-looking filename would make code count as stdlib: only importlib compiles those. */
static int ev_compile(const char *ev, PyObject *args)
{
	PyObject *fn = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	char buf[PATH_MAX];
	int fd;
	if (!fn || audit_path_arg(fn, buf, sizeof(buf), &fd) != PATH_STR) {
		PyErr_Clear();
		return 0;
	}
	if (!trusted_filename(buf) || caller_is_importlib())
		return 0;
	return audit_deny(ev, buf);
}

static int ev_untrusted_caller(const char *ev, PyObject *args)
{
	return origin_trusted(false) ? 0 : audit_deny(ev, "");
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
	{ "code.__new__", ev_deny },
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

static int hook(const char *event, PyObject *args, void *data)
{
	if (!aud.active || aud.depth > 0)
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
	r |= set_add(&aud.trusted, stdlib_dir);
	r |= set_add(&aud.trusted, dynload_dir);
	r |= set_add(&aud.readable, stdlib_dir);
	r |= set_add(&aud.readable, dynload_dir);
	static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/urandom",
					       "/dev/random" };
	for (size_t i = 0; i < PS_ARRAY_LEN(devices); i++)
		r |= set_add(&aud.readable, devices[i]);
	r |= set_add(&aud.writable, "/dev/null");
	for (size_t i = 0; p && i < p->python_paths.n; i++) {
		r |= set_add(&aud.trusted, p->python_paths.items[i]);
		r |= set_add(&aud.readable, p->python_paths.items[i]);
	}
	for (size_t i = 0; p && i < p->read_paths.n; i++)
		r |= set_add(&aud.readable, p->read_paths.items[i]);
	for (size_t i = 0; p && i < p->write_paths.n; i++)
		r |= set_add(&aud.writable, p->write_paths.items[i]);
	if (r) {
		snprintf(err, errlen, "audit: too many paths (at most %d a kind)", MAX_PATHS);
		return -1;
	}
	aud.modules = copy_list(o->modules, &aud.n_modules);
	aud.audit_allow = copy_list(p ? &p->audit_allow : NULL, &aud.n_audit_allow);
	if (!aud.modules || !aud.audit_allow) {
		snprintf(err, errlen, "audit: out of memory");
		return -1;
	}
	qsort(aud.modules, aud.n_modules, sizeof(char *), cmp_str);
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

int ps_audit_build_closure(const struct ps_strlist *modules)
{
	PyObject *loaded = PySys_GetObject("modules");	/* borrowed */
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	size_t n = 0;

	if (!loaded || !PyDict_Check(loaded)) {
		PyErr_SetString(PyExc_RuntimeError, "sys.modules is not a dict");
		return -1;
	}
	aud.closure_bits = calloc(ps_closure_names_len, 1);
	aud.closure_extra = calloc((size_t)PyDict_GET_SIZE(loaded) + 1, sizeof(char *));
	if (!aud.closure_bits || !aud.closure_extra) {
		PyErr_NoMemory();
		return -1;	/* the partial state is dropped with the process */
	}
	for (size_t i = 0; modules && i < modules->n; i++) {
		const struct ps_closure_entry *e =
			ps_closure_find(modules->items[i], strcspn(modules->items[i], "."));

		for (size_t k = 0; e && k < e->n_deps; k++)
			aud.closure_bits[e->deps[k]] = 1;
	}
	/* loaded by init: the probe that made closure.py had them too */
	while (PyDict_Next(loaded, &pos, &key, &value)) {
		const char *s = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		long idx = s ? ps_closure_name_index(s) : -1;

		PyErr_Clear();
		if (idx >= 0)
			aud.closure_bits[idx] = 1;
		else if (s && !(aud.closure_extra[n++] = strdup(s))) {
			PyErr_NoMemory();
			return -1;
		}
	}
	qsort(aud.closure_extra, n, sizeof(char *), cmp_str);
	aud.n_closure_extra = n;
	return 0;
}
