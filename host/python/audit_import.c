/* Imports: the allowlist, its closure, and the modules nobody may load. See audit.c for how
 * the checks at lookup and at load fit together. */
#include "audit_int.h"
#include "closure.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <frameobject.h>

#include "policy/policy.h"
#include "util/util.h"

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

bool ps_audit_denied_module(const char *name)
{
	const char *key = name;
	return bsearch(&key, denied_modules, PS_ARRAY_LEN(denied_modules), sizeof(char *),
		       audit_cmp_str) != NULL;
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
	       bsearch(&key, aud.modules, aud.n_modules, sizeof(char *), audit_cmp_str) != NULL;
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
					      sizeof(char *), audit_cmp_str) != NULL;
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

/* ---- imports ---- */

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
static bool in_internal(const char *name)
{
	const char *key = name;
	return aud.n_internal &&
	       bsearch(&key, aud.internal, aud.n_internal, sizeof(char *), audit_cmp_str) != NULL;
}

/* A module outside the stdlib (by its top-level name) that neither the allowlist nor
 * modules.internal names: for a library's lookup it does not exist (pandas probes for
 * bottleneck, numexpr, scipy: `except ImportError` must see them absent, not denied). */
static bool unlisted_third_party(const char *name)
{
	PyObject *top = PyUnicode_FromStringAndSize(name, (Py_ssize_t)strcspn(name, "."));
	int std = top ? PySet_Contains(aud.stdlib_names, top) : -1;

	Py_XDECREF(top);
	if (std < 0)
		PyErr_Clear();
	return std == 0 && !module_allowed(name, false) && !module_match(name, in_internal);
}

static int check_import(const char *name, int level, bool via_import_func, bool load)
{
	if (!aud.active)
		return 0;
	const char *why = NULL;
	bool trusted = (via_import_func && audit_caller_is_importlib()) || audit_origin_trusted(true);
	bool probe = false;
	const char *last = strrchr(name, '.');
	bool internal = trusted && module_match(name, in_internal);
	/* the last component too: an extension's init symbol comes from it (x._ctypes) */
	if (!internal && (module_match(name, ps_audit_denied_module) ||
			  (last && ps_audit_denied_module(last + 1)))) {
		why = "dangerous";
		probe = trusted;
	} else if (internal) {
		why = NULL;
	} else if (trusted && !load) {
		if (level == 0 && aud.n_internal && unlisted_third_party(name)) {
			why = "not allowed";
			probe = true;
		}
	} else if (strcmp(name, "__main__") != 0 && level == 0 && !module_allowed(name, !trusted)) {
		why = "not allowed";
	} else if (level > 0 && !trusted) {
		why = "not allowed";
	}
	if (!why)
		return 0;
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

/* What a file under a trusted directory is: the module it is, by its path
 * (stdlib/json/decoder.py -> json.decoder, lib-dynload/_socket.cpython-311-x86_64-linux-gnu.so
 * -> _socket, dist-packages/numpy/core/_multiarray_umath.cpython-311-...so ->
 * numpy.core._multiarray_umath). FILE_NONE when the file is under none (the snippet's own
 * code, scratch modules). */
enum file_kind { FILE_NONE, FILE_STDLIB, FILE_LIBRARY };

static enum file_kind module_of_file(const char *fn, char *out, size_t n)
{
	if (strncmp(fn, "<frozen ", 8) == 0) {
		snprintf(out, n, "%.*s", (int)(strlen(fn + 8) ? strlen(fn + 8) - 1 : 0), fn + 8);
		return out[0] != '\0' ? FILE_STDLIB : FILE_NONE;
	}
	for (size_t i = aud.trusted.n; i-- > 0;) {	/* lib-dynload before the stdlib around it */
		const char *dir = aud.trusted.items[i];
		if (fn[0] != '/' || !audit_under(fn, dir) || fn[strlen(dir)] != '/')
			continue;
		const char *rel = fn + strlen(dir) + 1;
		const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
		/* an extension's stem names it (init symbol PyInit_stem); a source file drops .py */
		bool ext = strstr(base, ".so") != NULL;
		snprintf(out, n, "%.*s", (int)(ext ? (size_t)(base - rel) + strcspn(base, ".")
						 : strlen(rel)), rel);
		char *dot = strrchr(out, '.');
		if (!ext && dot && strchr(dot, '/') == NULL)
			*dot = '\0';
		size_t len = strlen(out);
		if (len >= 9 && strcmp(out + len - 9, "/__init__") == 0)
			out[len - 9] = '\0';
		for (char *p = out; *p; p++)
			if (*p == '/')
				*p = '.';
		return i < 2 ? FILE_STDLIB : FILE_LIBRARY;
	}
	return FILE_NONE;
}

int ev_import(const char *ev, PyObject *args)
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
	/* a library's extension only from that library's own directory: the file's module
	 * (numpy.core._multiarray_umath) must itself be allowed */
	if (module_of_file(real, mod, sizeof(mod)) == FILE_NONE) {
		audit_record("import", "import", f);
		return raise_import_error(f, "not a module of the stdlib or the policy's paths");
	}
	return mod[0] ? check_import(mod, 0, false, true) : 0;
}

/* Code about to run: a module body (or any code object) whose file is in the stdlib counts as
 * that module being imported, however it was loaded (SourceFileLoader by hand, importlib's
 * pure-Python __import__ with the finder removed, source_to_code under a stdlib name). */
int ev_exec(const char *ev, PyObject *args)
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
	if (module_of_file(fn, mod, sizeof(mod)) == FILE_NONE || !mod[0])
		return 0;
	return check_import(mod, 0, false, true);
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
	qsort(aud.closure_extra, n, sizeof(char *), audit_cmp_str);
	aud.n_closure_extra = n;
	return 0;
}
