/* The Python layer's file checks: turning a path argument into a resolved absolute path
 * without running snippet code, and the rules for the file events (open, os.* mutations,
 * stat): readable paths, writable paths (scratch and the policy's), pysnip's own channels. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "audit_int.h"
#include "util/util.h"

/* ---- paths ---- */


/* Only types whose conversion runs no snippet code: str, bytes, fd, DirEntry, pathlib's own. */
static bool plain_pathlike(PyObject *o)
{
	static const char *const pathlib_types[] = { "PurePath", "PurePosixPath", "Path",
						     "PosixPath" };
	const char *tn = Py_TYPE(o)->tp_name;
	if (strcmp(tn, "posix.DirEntry") == 0)
		return true;
	PyObject *pathlib = aud.pathlib_name ? PyImport_GetModule(aud.pathlib_name) : NULL;
	bool ok = false;
	for (size_t i = 0; pathlib && !ok && i < PS_ARRAY_LEN(pathlib_types); i++) {
		PyObject *t = PyObject_GetAttrString(pathlib, pathlib_types[i]);
		ok = t == (PyObject *)Py_TYPE(o);
		Py_XDECREF(t);
	}
	Py_XDECREF(pathlib);
	PyErr_Clear();
	return ok;
}

enum path_kind audit_path_arg(PyObject *o, char *buf, size_t n, int *fd)
{
	if (o == NULL || o == Py_None) {
		snprintf(buf, n, ".");
		return PATH_NONE;
	}
	if (PyLong_Check(o)) {
		*fd = PyLong_AsLong(o);
		PyErr_Clear();
		return PATH_FD;
	}
	if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !plain_pathlike(o))
		return PATH_BAD;
	PyObject *p = PyOS_FSPath(o), *b = NULL;
	if (p && PyUnicode_Check(p))
		b = PyUnicode_EncodeFSDefault(p);
	else if (p && PyBytes_Check(p))
		b = Py_NewRef(p);
	Py_XDECREF(p);
	if (!b) {
		PyErr_Clear();
		return PATH_BAD;
	}
	snprintf(buf, n, "%s", PyBytes_AS_STRING(b));
	bool nul = strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b);
	Py_DECREF(b);
	return nul ? PATH_BAD : PATH_STR;
}

/* Lexical absolute form of path (relative to dir_fd or the cwd), then symlinks resolved as far
 * as the file (or, for a file not created yet, its directory) exists. */
static int resolve(const char *path, int dir_fd, char *out)
{
	char abs[PATH_MAX * 2], real[PATH_MAX];
	if (path[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", path);
	} else {
		char base[PATH_MAX];
		if (dir_fd >= 0 && dir_fd != AT_FDCWD) {
			char link[64];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", dir_fd);
			ssize_t k = readlink(link, base, sizeof(base) - 1);
			if (k <= 0)
				return -1;
			base[k] = '\0';
		} else if (!getcwd(base, sizeof(base))) {
			return -1;
		}
		snprintf(abs, sizeof(abs), "%s/%s", base, path);
	}
	/* normalise ".", ".." and "//" lexically */
	char *w = out, *seg = abs;
	*w = '\0';
	while (*seg) {
		while (*seg == '/')
			seg++;
		char *end = strchrnul(seg, '/');
		size_t len = (size_t)(end - seg);
		if (len == 0 || (len == 1 && seg[0] == '.')) {
		} else if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			char *slash = strrchr(out, '/');
			w = slash ? slash : out;
			*w = '\0';
		} else {
			if ((size_t)(w - out) + len + 2 >= PATH_MAX)
				return -1;
			*w++ = '/';
			memcpy(w, seg, len);
			w += len;
			*w = '\0';
		}
		seg = end;
	}
	if (!out[0])
		strcpy(out, "/");
	if (realpath(out, real)) {
		strcpy(out, real);
	} else {
		char *slash = strrchr(out, '/');
		if (slash && slash != out) {
			*slash = '\0';
			if (realpath(out, real) && strlen(real) + strlen(slash + 1) + 2 < PATH_MAX) {
				size_t rl = strlen(real);
				real[rl] = '/';
				strcpy(real + rl + 1, slash + 1);
				strcpy(out, real);
			} else {
				*slash = '/';
			}
		}
	}
	return 0;
}

bool ps_audit_fd_protected(int fd)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(aud.protected_fds); i++)
		if (fd >= 0 && fd == aud.protected_fds[i])
			return true;
	return false;
}

static bool fd_ok(int fd)
{
	return !ps_audit_fd_protected(fd);
}

/* A library probing for a path it may not see (matplotlib's Path(...).exists() on its
 * repository markers, os.walk over X11 font directories when it builds a font list) must find
 * it absent, as in a container without it: PermissionError is not an error that pathlib or
 * os.walk ignores. Absent whether or not it exists, so nothing leaks; still a denial. */
static int deny_or_absent(const char *event, const char *given)
{
	PyObject *exc;

	if (!audit_library_asks())
		return audit_deny(event, given);
	audit_record("audit", event, given);
	exc = PyObject_CallFunction(PyExc_FileNotFoundError, "is", ENOENT,
				    "pysnip: outside the policy's readable paths");
	if (exc) {
		PyErr_SetObject(PyExc_FileNotFoundError, exc);
		Py_DECREF(exc);
	}
	audit_remember_raised();
	return -1;
}

/* 0 allowed, -1 denied (exception set). want_write: the writable set, else the readable one. */
static int check_path(const char *event, PyObject *args, Py_ssize_t idx, Py_ssize_t dirfd_idx,
		      bool want_write)
{
	char given[PATH_MAX], full[PATH_MAX];
	int fd = -1, dir_fd = -1;
	PyObject *o = PyTuple_GET_SIZE(args) > idx ? PyTuple_GET_ITEM(args, idx) : NULL;
	enum path_kind k = audit_path_arg(o, given, sizeof(given), &fd);
	if (k == PATH_FD)
		return fd_ok(fd) ? 0 : audit_deny(event, "pysnip channel fd");
	if (k == PATH_BAD)
		return audit_deny(event, "<path-like object>");
	if (dirfd_idx >= 0 && PyTuple_GET_SIZE(args) > dirfd_idx) {
		PyObject *d = PyTuple_GET_ITEM(args, dirfd_idx);
		if (d != Py_None && PyLong_Check(d))
			dir_fd = PyLong_AsLong(d);
		PyErr_Clear();
	}
	if (resolve(given, dir_fd, full) < 0)
		return audit_deny(event, given);
	bool ok = audit_in_set(&aud.writable, full) || (aud.scratch[0] && audit_under(full, aud.scratch));
	if (!want_write && !ok)
		ok = audit_in_set(&aud.readable, full);
	if (!ok && !want_write && strncmp(event, "os.", 3) == 0)
		return deny_or_absent(event, given);	/* listing, walking: not open */
	return ok ? 0 : audit_deny(event, given);
}

/* The directories on the way to a granted path (/, /usr, /tmp): their metadata says nothing
 * the policy does not already. */
static bool ancestor_of(const struct path_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (audit_under(s->items[i], path))
			return true;
	return false;
}

/* os.stat, lstat, access: Landlock has no right for metadata, so this layer alone keeps the
 * snippet from probing the host's files (their size, owner, times, existence). */
int ps_audit_check_stat(const char *event, PyObject *path, PyObject *dir_fd)
{
	char given[PATH_MAX], full[PATH_MAX], detail[PATH_MAX + 64];
	int fd = -1, dfd = -1;
	if (!aud.active)
		return 0;
	enum path_kind k = audit_path_arg(path, given, sizeof(given), &fd);
	if (k == PATH_FD)
		return 0;	/* an open fd: the open was checked */
	if (k == PATH_BAD)
		return audit_deny(event, "<path-like object>");
	if (dir_fd && dir_fd != Py_None && PyLong_Check(dir_fd))
		dfd = PyLong_AsLong(dir_fd);
	PyErr_Clear();
	if (resolve(given, dfd, full) == 0 &&
	    (audit_in_set(&aud.readable, full) || audit_in_set(&aud.writable, full) ||
	     (aud.scratch[0] && (audit_under(full, aud.scratch) || audit_under(aud.scratch, full))) ||
	     ancestor_of(&aud.readable, full) || ancestor_of(&aud.writable, full)))
		return 0;
	if (audit_library_asks())
		return deny_or_absent(event, given);
	snprintf(detail, sizeof(detail), "%s", given);
	audit_record("audit", event, detail);
	PyErr_Format(PyExc_PermissionError,
		     "pysnip: %s('%s') denied by policy '%s' (metadata outside the readable paths; "
		     "Landlock has no right for stat, so the Python layer refuses it)",
		     event, given, aud.policy);
	audit_remember_raised();
	return -1;
}

/* CPython raises no audit event for readlink, and Landlock has no right for it: without
 * this, the snippet reads where any symlink of the host points (/proc/N/cwd, /etc/...). */
int ps_audit_check_readlink(const char *event, PyObject *path, PyObject *dir_fd)
{
	PyObject *args;
	int rc;

	if (!aud.active)
		return 0;
	args = PyTuple_Pack(2, path ? path : Py_None, dir_fd ? dir_fd : Py_None);
	if (!args)
		return -1;
	rc = check_path(event, args, 0, 1, false);
	Py_DECREF(args);
	return rc;
}

static bool open_writes(PyObject *args)
{
	PyObject *mode = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	PyObject *flags = PyTuple_GET_SIZE(args) > 2 ? PyTuple_GET_ITEM(args, 2) : NULL;
	if (mode && PyUnicode_Check(mode)) {
		const char *m = PyUnicode_AsUTF8(mode);
		if (m && strpbrk(m, "wax+"))
			return true;
	}
	if (flags && PyLong_Check(flags)) {
		long f = PyLong_AsLong(flags);
		PyErr_Clear();
		if ((f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC | O_APPEND)))
			return true;
	}
	return false;
}

int ev_open(const char *ev, PyObject *args)
{
	return check_path(ev, args, 0, -1, open_writes(args));
}

#define PATH_EVENT(fn, idx, dirfd, write)                                  \
	int fn(const char *ev, PyObject *args)                      \
	{                                                                  \
		return check_path(ev, args, idx, dirfd, write);            \
	}
PATH_EVENT(ev_read0, 0, -1, false)
PATH_EVENT(ev_write0, 0, -1, true)
PATH_EVENT(ev_write0_fd1, 0, 1, true)
PATH_EVENT(ev_write0_fd2, 0, 2, true)
PATH_EVENT(ev_write0_fd3, 0, 3, true)

int ev_write_two(const char *ev, PyObject *args)	/* rename, link: src and dst */
{
	if (check_path(ev, args, 0, 2, true) < 0)
		return -1;
	return check_path(ev, args, 1, 3, true);
}

int ev_symlink(const char *ev, PyObject *args)
{
	return check_path(ev, args, 1, 2, true);
}

