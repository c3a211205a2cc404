/* Internal to the Python layer's audit files: the hook's state and the helpers they share.
 * One way only: audit.c (the hook and its event table) calls the event families
 * (audit_paths.c files, audit_import.c imports, audit_code.c code creation), which call
 * audit_core.c (state, path sets, frames, denials). Nothing outside host/python includes it. */
#ifndef PS_AUDIT_INT_H
#define PS_AUDIT_INT_H

#include <limits.h>
#include <stdbool.h>

#include "audit.h"

#define MAX_DENIALS 64
#define MAX_PATHS 64
#define MAX_RAISED 16

struct denial {
	char layer[8];
	char event[48];
	char detail[256];
	int line;		/* snippet line, -1 when unknown */
};

struct path_set {
	char *items[MAX_PATHS];
	size_t n;
};

struct ps_audit_state {
	bool installed, active;
	int depth;			/* re-entrancy: events raised by the hook's own calls pass */
	const char *policy;
	struct path_set readable, writable, trusted;
	char **modules;			/* sorted allowlist */
	size_t n_modules;
	/* what the allowed modules import (exact names): a flag per ps_closure_names entry, and
	 * the sorted names init loaded that the table does not list */
	unsigned char *closure_bits;
	char **closure_extra;
	size_t n_closure_extra;
	char **audit_allow;
	size_t n_audit_allow;
	char **internal;		/* sorted modules.internal of the policy */
	size_t n_internal;
	PyObject *stdlib_names;		/* sys.stdlib_module_names */
	char scratch[PATH_MAX];
	int protected_fds[4];		/* status, report, the report's private copy */
	PyObject *import_error;		/* PolicyImportError, a ModuleNotFoundError */
	PyObject *orig_import;
	PyObject *pathlib_name;
	struct denial denials[MAX_DENIALS];
	size_t n_denials;
	PyObject *raised[MAX_RAISED];	/* the last exceptions the hook raised (strong refs) */
	size_t n_raised;
};

extern struct ps_audit_state aud;

/* audit_core.c */
int audit_cmp_str(const void *a, const void *b);	/* qsort/bsearch over char * */
bool audit_under(const char *path, const char *prefix);
bool audit_in_set(const struct path_set *s, const char *path);
int audit_set_add(struct path_set *s, const char *path);
bool audit_trusted_filename(const char *fn);
/* Who asks: the innermost frame (outside the import machinery when skip_importlib) is
 * trusted code, or no Python frame at all (the host's own C calls). */
bool audit_origin_trusted(bool skip_importlib);
bool audit_caller_is_importlib(void);
/* The innermost frame's code comes from one of the policy's python paths (a library such
 * as numpy, not the stdlib). */
bool audit_caller_is_library(void);
/* The innermost frame outside the stdlib is a library's (from the policy's python paths):
 * a library asks, maybe through the stdlib (pathlib, os.path). */
bool audit_library_asks(void);
void audit_record(const char *layer, const char *event, const char *detail);
void audit_remember_raised(void);
int audit_deny(const char *event, const char *detail);

/* audit_import.c: the import events */
int ev_import(const char *ev, PyObject *args);
int ev_exec(const char *ev, PyObject *args);

/* audit_code.c: code creation and introspection */
int ev_marshal(const char *ev, PyObject *args);
int ev_compile(const char *ev, PyObject *args);
int ev_untrusted_caller(const char *ev, PyObject *args);
int ev_code_new(const char *ev, PyObject *args);
int ev_ctypes_dlopen(const char *ev, PyObject *args);

/* audit_paths.c: path arguments and the file events */
enum path_kind { PATH_NONE, PATH_STR, PATH_FD, PATH_BAD };
enum path_kind audit_path_arg(PyObject *o, char *buf, size_t n, int *fd);
int ev_open(const char *ev, PyObject *args);
int ev_read0(const char *ev, PyObject *args);
int ev_write0(const char *ev, PyObject *args);
int ev_write0_fd1(const char *ev, PyObject *args);
int ev_write0_fd2(const char *ev, PyObject *args);
int ev_write0_fd3(const char *ev, PyObject *args);
int ev_write_two(const char *ev, PyObject *args);
int ev_symlink(const char *ev, PyObject *args);

#endif
