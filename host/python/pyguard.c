/* Guards on functions that raise no audit event the hook could refuse: the posix calls that
 * close or replace pysnip's own descriptors or read metadata, and the _imp calls that create or
 * run modules past every finder. Each is replaced, in its module's dict, by a C wrapper that
 * checks and then calls the original; the originals live only here (the wrappers have no
 * __self__), so the snippet never reaches them.
 *
 * Like the audit hook this is the Python layer: clean, attributable errors. The kernel layers
 * do not depend on it (close_range from native code would still close the report fd; the
 * report then goes to the private copy interp.c keeps). */
#include "audit.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

enum guard_id {
	G_CLOSE, G_CLOSERANGE, G_DUP2, G_STAT, G_LSTAT, G_ACCESS, G_READLINK,
	G_CREATE_BUILTIN, G_EXEC_BUILTIN, G_CREATE_DYNAMIC, G_EXEC_DYNAMIC, G_INIT_FROZEN,
	G_N
};

static PyObject *orig[G_N];
static PyObject *module_spec;	/* _frozen_importlib.ModuleSpec */
static PyObject *pending;	/* modules created through the guards, not yet executed */

static PyObject *call_orig(enum guard_id id, PyObject *args, PyObject *kw)
{
	return PyObject_Call(orig[id], args, kw);
}

/* Argument i of args, else keyword name: borrowed, or NULL. */
static PyObject *arg(PyObject *args, PyObject *kw, Py_ssize_t i, const char *name)
{
	if (PyTuple_GET_SIZE(args) > i)
		return PyTuple_GET_ITEM(args, i);
	return kw ? PyDict_GetItemString(kw, name) : NULL;
}

static int fd_arg(PyObject *o)
{
	int fd = o && PyLong_Check(o) ? PyLong_AsLong(o) : -1;
	PyErr_Clear();
	return fd;
}

static PyObject *deny_fd(const char *event, int fd)
{
	char detail[64];
	snprintf(detail, sizeof(detail), "pysnip channel fd %d", fd);
	ps_audit_deny(event, detail);
	return NULL;
}

/* ---- descriptors ---- */

static PyObject *g_close(PyObject *self, PyObject *args, PyObject *kw)
{
	int fd = fd_arg(arg(args, kw, 0, "fd"));
	if (ps_audit_fd_protected(fd))
		return deny_fd("os.close", fd);
	return call_orig(G_CLOSE, args, kw);
}

static PyObject *g_dup2(PyObject *self, PyObject *args, PyObject *kw)
{
	int fd2 = fd_arg(arg(args, kw, 1, "fd2"));
	if (ps_audit_fd_protected(fd2))
		return deny_fd("os.dup2", fd2);
	return call_orig(G_DUP2, args, kw);
}

/* "Close everything from 3 up" is an ordinary idiom: close it all but pysnip's own. */
static PyObject *g_closerange(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *lo_o = arg(args, kw, 0, "fd_low"), *hi_o = arg(args, kw, 1, "fd_high");
	if (!lo_o || !hi_o || !PyLong_Check(lo_o) || !PyLong_Check(hi_o) || kw)
		return call_orig(G_CLOSERANGE, args, kw);	/* its own TypeError */
	long lo = PyLong_AsLong(lo_o), hi = PyLong_AsLong(hi_o);
	if (PyErr_Occurred())
		return NULL;
	long start = lo < 0 ? 0 : lo;
	for (long fd = start; fd <= hi; fd++) {
		if (fd < hi && !ps_audit_fd_protected((int)fd))
			continue;
		if (fd > start) {
			PyObject *r = PyObject_CallFunction(orig[G_CLOSERANGE], "ll", start, fd);
			if (!r)
				return NULL;
			Py_DECREF(r);
		}
		start = fd + 1;
		if (fd >= INT_MAX)
			break;
	}
	Py_RETURN_NONE;
}

/* ---- metadata ---- */

static PyObject *stat_like(enum guard_id id, const char *event, PyObject *args, PyObject *kw)
{
	PyObject *dir_fd = kw ? PyDict_GetItemString(kw, "dir_fd") : NULL;
	if (ps_audit_check_stat(event, arg(args, kw, 0, "path"), dir_fd) < 0)
		return NULL;
	return call_orig(id, args, kw);
}

static PyObject *g_stat(PyObject *self, PyObject *args, PyObject *kw)
{
	return stat_like(G_STAT, "os.stat", args, kw);
}

static PyObject *g_lstat(PyObject *self, PyObject *args, PyObject *kw)
{
	return stat_like(G_LSTAT, "os.lstat", args, kw);
}

static PyObject *g_access(PyObject *self, PyObject *args, PyObject *kw)
{
	return stat_like(G_ACCESS, "os.access", args, kw);
}

static PyObject *g_readlink(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *dir_fd = kw ? PyDict_GetItemString(kw, "dir_fd") : NULL;

	if (ps_audit_check_readlink("os.readlink", arg(args, kw, 0, "path"), dir_fd) < 0)
		return NULL;
	return call_orig(G_READLINK, args, kw);
}

/* ---- modules ---- */

/* The name (new ref) of a spec: read once, so a spec whose name changes between our check
 * and the loader's read gains nothing (the loader gets a fresh spec built from what we read). */
static PyObject *spec_str(PyObject *spec, const char *attr)
{
	PyObject *v = PyObject_GetAttrString(spec, attr);
	if (v && !PyUnicode_CheckExact(v)) {
		Py_DECREF(v);
		PyErr_Format(PyExc_TypeError, "spec.%s must be a str", attr);
		return NULL;
	}
	return v;
}

/* Allowed by the import rule and not a second copy of a loaded module (a fresh posix would
 * bring back the unguarded functions and the host's environment). */
static int check_new_module(const char *event, PyObject *name)
{
	const char *s = PyUnicode_AsUTF8(name);
	if (!s || ps_audit_check_module(s) < 0)
		return -1;
	PyObject *m = PyImport_GetModule(name);
	if (m) {
		Py_DECREF(m);
		return ps_audit_deny(event, s);
	}
	return PyErr_Occurred() ? -1 : 0;
}

static PyObject *track(PyObject *mod)
{
	if (mod && PyModule_Check(mod) && PyList_Append(pending, mod) < 0)
		Py_CLEAR(mod);
	return mod;
}

static PyObject *create(enum guard_id id, const char *event, PyObject *args, PyObject *kw,
			bool with_origin)
{
	PyObject *spec = arg(args, kw, 0, "spec"), *fresh = NULL, *r = NULL;
	if (!spec)
		return call_orig(id, args, kw);
	PyObject *name = spec_str(spec, "name");
	PyObject *origin = name && with_origin ? spec_str(spec, "origin") : NULL;
	if (name && (!with_origin || origin) && check_new_module(event, name) == 0)
		fresh = PyObject_CallFunction(module_spec, "OO", name, Py_None);
	if (fresh && with_origin && PyObject_SetAttrString(fresh, "origin", origin) < 0)
		Py_CLEAR(fresh);
	if (fresh)
		r = track(PyObject_CallOneArg(orig[id], fresh));
	Py_XDECREF(fresh);
	Py_XDECREF(origin);
	Py_XDECREF(name);
	return r;
}

/* Only a module the guards just created gets executed: re-running a loaded module's
 * initialisation (posix's environ, a reload) is not an import. */
static PyObject *exec_mod(enum guard_id id, const char *event, PyObject *args, PyObject *kw)
{
	PyObject *mod = arg(args, kw, 0, "mod");
	for (Py_ssize_t i = 0; mod && i < PyList_GET_SIZE(pending); i++) {
		if (PyList_GET_ITEM(pending, i) == mod) {
			Py_INCREF(mod);
			PyObject *r = PySequence_DelItem(pending, i) < 0 ? NULL :
				      PyObject_CallOneArg(orig[id], mod);
			Py_DECREF(mod);
			return r;
		}
	}
	const char *n = mod && PyModule_Check(mod) ? PyModule_GetName(mod) : NULL;
	PyErr_Clear();
	ps_audit_deny(event, n ? n : "<not a new module>");
	return NULL;
}

static PyObject *g_create_builtin(PyObject *self, PyObject *args, PyObject *kw)
{
	return create(G_CREATE_BUILTIN, "_imp.create_builtin", args, kw, false);
}

static PyObject *g_create_dynamic(PyObject *self, PyObject *args, PyObject *kw)
{
	return create(G_CREATE_DYNAMIC, "_imp.create_dynamic", args, kw, true);
}

static PyObject *g_exec_builtin(PyObject *self, PyObject *args, PyObject *kw)
{
	return exec_mod(G_EXEC_BUILTIN, "_imp.exec_builtin", args, kw);
}

static PyObject *g_exec_dynamic(PyObject *self, PyObject *args, PyObject *kw)
{
	return exec_mod(G_EXEC_DYNAMIC, "_imp.exec_dynamic", args, kw);
}

static PyObject *g_init_frozen(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *name = arg(args, kw, 0, "name");
	if (!name || !PyUnicode_CheckExact(name))
		return call_orig(G_INIT_FROZEN, args, kw);
	if (check_new_module("_imp.init_frozen", name) < 0)
		return NULL;
	return call_orig(G_INIT_FROZEN, args, kw);
}

/* ---- installation ---- */

#define GUARD(mod, fn, id) { mod, #fn, id, { #fn, (PyCFunction)(void (*)(void))g_##fn, \
					    METH_VARARGS | METH_KEYWORDS, "pysnip-guarded " #fn } }

static struct guard {
	const char *module, *name;
	enum guard_id id;
	PyMethodDef def;
} guards[] = {
	GUARD("posix", close, G_CLOSE),
	GUARD("posix", closerange, G_CLOSERANGE),
	GUARD("posix", dup2, G_DUP2),
	GUARD("posix", stat, G_STAT),
	GUARD("posix", lstat, G_LSTAT),
	GUARD("posix", access, G_ACCESS),
	GUARD("posix", readlink, G_READLINK),
	GUARD("_imp", create_builtin, G_CREATE_BUILTIN),
	GUARD("_imp", exec_builtin, G_EXEC_BUILTIN),
	GUARD("_imp", create_dynamic, G_CREATE_DYNAMIC),
	GUARD("_imp", exec_dynamic, G_EXEC_DYNAMIC),
	GUARD("_imp", init_frozen, G_INIT_FROZEN),
};

/* Put w in place of the original everywhere the name was already copied (os re-exports posix). */
static int replace(const char *module, const char *name, PyObject *old, PyObject *w)
{
	static const char *const also[] = { "os" };
	PyObject *m = PyImport_ImportModule(module);
	int r = m ? PyObject_SetAttrString(m, name, w) : -1;
	Py_XDECREF(m);
	for (size_t i = 0; r == 0 && i < PS_ARRAY_LEN(also); i++) {
		PyObject *n = PyUnicode_FromString(also[i]);
		PyObject *o = n ? PyImport_GetModule(n) : NULL;
		PyObject *cur = o ? PyObject_GetAttrString(o, name) : NULL;
		if (cur == old)
			r = PyObject_SetAttrString(o, name, w);
		Py_XDECREF(cur);
		Py_XDECREF(o);
		Py_XDECREF(n);
		PyErr_Clear();
	}
	return r;
}

int ps_guard_install(void)
{
	PyObject *fi = PyImport_ImportModule("_frozen_importlib");
	module_spec = fi ? PyObject_GetAttrString(fi, "ModuleSpec") : NULL;
	Py_XDECREF(fi);
	pending = PyList_New(0);
	if (!module_spec || !pending)
		return -1;
	for (size_t i = 0; i < PS_ARRAY_LEN(guards); i++) {
		struct guard *gd = &guards[i];
		PyObject *m = PyImport_ImportModule(gd->module);
		orig[gd->id] = m ? PyObject_GetAttrString(m, gd->name) : NULL;
		Py_XDECREF(m);
		PyObject *w = orig[gd->id] ? PyCFunction_NewEx(&gd->def, NULL, NULL) : NULL;
		int r = w ? replace(gd->module, gd->name, orig[gd->id], w) : -1;
		Py_XDECREF(w);
		if (r < 0)
			return -1;
	}
	return 0;
}
