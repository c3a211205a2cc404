/* The Python layer's core: the hook's state, path sets, the frame that decides who asks, and
 * the record of denials (with the snippet line) and of the exceptions the hook raised. Every
 * other audit_*.c file builds on this one; it calls none of them. */
#include "audit_int.h"

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

struct ps_audit_state aud = { .protected_fds = { -1, -1, -1, -1 } };

int audit_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
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

int audit_set_add(struct path_set *s, const char *path)
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

bool audit_trusted_filename(const char *fn)
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

bool audit_origin_trusted(bool skip_importlib)
{
	PyFrameObject *f = find_frame(skip_importlib ? outside_import_machinery : any_frame);
	bool trusted = !f || audit_trusted_filename(code_filename(f));
	Py_XDECREF(f);
	return trusted;
}

bool audit_caller_is_library(void)
{
	PyFrameObject *f = PyEval_GetFrame();
	const char *fn = f ? code_filename(f) : "";

	/* trusted.items[0] and [1] are the stdlib and lib-dynload; the rest the policy's paths */
	for (size_t i = 2; fn[0] == '/' && i < aud.trusted.n; i++)
		if (audit_under(fn, aud.trusted.items[i]))
			return true;
	return false;
}

static bool stdlib_frame(const char *fn)
{
	return strncmp(fn, "<frozen ", 8) == 0 ||
	       (aud.trusted.n >= 2 && fn[0] == '/' &&
		(audit_under(fn, aud.trusted.items[0]) || audit_under(fn, aud.trusted.items[1])));
}

static bool outside_stdlib(const char *fn)
{
	return !stdlib_frame(fn);
}

bool audit_library_asks(void)
{
	PyFrameObject *f = aud.trusted.n > 2 ? find_frame(outside_stdlib) : NULL;
	const char *fn = f ? code_filename(f) : "";
	bool lib = false;

	for (size_t i = 2; f && fn[0] == '/' && i < aud.trusted.n && !lib; i++)
		lib = audit_under(fn, aud.trusted.items[i]);
	Py_XDECREF(f);
	return lib;
}

bool audit_caller_is_importlib(void)
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

/* ---- exceptions the hook raised ---- */

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

