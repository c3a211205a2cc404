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

