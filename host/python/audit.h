/* The Python layer's enforcement, shared by interp.c and audit.c only (both include Python.h):
 * the C audit hook, the import checks (builtins.__import__ wrapper, a sys.meta_path finder,
 * the "import" audit event) and the denial record the report reads. */
#ifndef PS_AUDIT_H
#define PS_AUDIT_H

#include <Python.h>
#include <stdbool.h>

#include "interp.h"

/* Before Py_InitializeFromConfig: PySys_AddAuditHook. The hook does nothing until activated. */
int ps_audit_install(void);

/* Built-in modules that must not exist when the Python layer is on (filters PyImport_Inittab). */
bool ps_audit_denied_module(const char *name);

/* After init, parent: copy the policy's paths and module lists; make PolicyImportError.
 * 0, or -1 with err filled. */
int ps_audit_configure(const struct ps_interp_opts *o, const char *stdlib_dir,
		       const char *dynload_dir, char *err, size_t errlen);

/* Start enforcing (the end of init): from here on every event is checked. */
void ps_audit_activate(void);

/* Child: the per-run scratch directory. */
void ps_audit_set_scratch(const char *dir);

/* A descriptor of pysnip's own (status, report): the snippet may not close, replace or wrap it. */
void ps_audit_protect_fd(int fd);
bool ps_audit_fd_protected(int fd);

/* The closure of the allowlist: every module the allowed ones import (exact names), which the
 * stdlib may import on the snippet's behalf: what init loaded (sys.modules now) and each
 * allowed module's closure (closure.h). 0, or -1 with an exception set. */
int ps_audit_build_closure(const struct ps_strlist *modules);

/* A session's cell starts with no denials of the cells before it. */
void ps_audit_denials_reset(void);

/* How many denials the hook recorded in this run. */
size_t ps_audit_denial_count(void);

/* Whether exc is an exception the hook itself raised (a denial), not a look-alike. */
bool ps_audit_raised_by_hook(PyObject *exc);

/* For the guards in pyguard.c: 0 allowed, -1 denied with the exception set and recorded. */
int ps_audit_check_module(const char *name);
int ps_audit_check_stat(const char *event, PyObject *path, PyObject *dir_fd);
int ps_audit_deny(const char *event, const char *detail);

/* After init, before activation: replace the functions of posix and _imp that can close the
 * channels, re-create modules or load code past the finder with checked wrappers.
 * 0, or -1 with an exception set. */
int ps_guard_install(void);

/* Objects pyshim installs: builtins.__import__ replacement and a meta_path finder.
 * New references; NULL with an exception on failure. */
PyObject *ps_audit_import_func(PyObject *orig_import);
PyObject *ps_audit_finder(void);

/* The denials recorded so far, as a list of (layer, event, detail, line|None). New reference. */
PyObject *ps_audit_denials(PyObject *self, PyObject *unused);

#endif
