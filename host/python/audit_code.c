/* Code creation and introspection: compile() under a trusted-looking filename, marshal data
 * becoming code, tracing and frame powers. Only the import system and trusted code may. */
#include "audit_int.h"

#include <limits.h>
#include <string.h>

/* marshal data becomes code: only the import system may do that. */
int ev_marshal(const char *ev, PyObject *args)
{
	return audit_caller_is_importlib() ? 0 : audit_deny(ev, "");
}

/* A trusted-looking filename would make code count as stdlib: only importlib compiles those. */
int ev_compile(const char *ev, PyObject *args)
{
	PyObject *fn = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	char buf[PATH_MAX];
	int fd;
	if (!fn || audit_path_arg(fn, buf, sizeof(buf), &fd) != PATH_STR) {
		PyErr_Clear();
		return 0;
	}
	if (!audit_trusted_filename(buf) || audit_caller_is_importlib())
		return 0;
	return audit_deny(ev, buf);
}

int ev_untrusted_caller(const char *ev, PyObject *args)
{
	return audit_origin_trusted(false) ? 0 : audit_deny(ev, "");
}


/* Code objects libraries make themselves: numpy's overrides.py renames every array-function
 * wrapper (code.replace of co_name and co_filename) at import, and Cython extensions create a
 * body-less code object per function while their module initialises (the innermost frame is
 * then the import machinery). Allowed for those callers, when the new filename does not look
 * trusted, and from the import machinery only with no bytecode at all. */
int ev_code_new(const char *ev, PyObject *args)
{
	PyObject *co = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *fn = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	const char *s = fn && PyUnicode_Check(fn) ? PyUnicode_AsUTF8(fn) : NULL;
	bool empty = co && PyBytes_Check(co) && PyBytes_GET_SIZE(co) == 0;

	if (!s)
		PyErr_Clear();
	if (s && aud.trusted.n > 2 && !audit_trusted_filename(s) &&
	    (audit_caller_is_library() || (empty && audit_caller_is_importlib())))
		return 0;
	return audit_deny(ev, "");
}

/* ctypes' own import opens the main program (pythonapi = PyDLL(None)); pandas imports
 * ctypes, so a policy whose libraries need it lists ctypes in modules.internal. dlopen(None)
 * from trusted code only; every other ctypes event (dlsym, calls, cdata) stays denied. */
int ev_ctypes_dlopen(const char *ev, PyObject *args)
{
	PyObject *name = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;

	if (name == Py_None && audit_origin_trusted(false))
		return 0;
	return audit_deny(ev, name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "");
}
