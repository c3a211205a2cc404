/* Session cells (DESIGN.md section 6) on the interpreter's side: the holder's one-time
 * set-up, one cell run from C at the bottom of the stack (pyshim/cell.py splits it and
 * builds its report), and the disposable queries (complete, inspect, is_complete). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "audit.h"
#include "interp_int.h"
#include "util/util.h"

static char *(*input_line)(const char *prompt, bool password);

/* pyshim's input(): the front's answer, or EOFError when it refuses. */
static PyObject *cell_input(PyObject *self, PyObject *args)
{
	const char *prompt = "";
	int password = 0;
	char *line;
	PyObject *r;

	if (!PyArg_ParseTuple(args, "|sp", &prompt, &password))
		return NULL;
	line = input_line ? input_line(prompt, password) : NULL;
	if (!line) {
		PyErr_SetString(PyExc_EOFError, "input(): the session's front gave no input");
		return NULL;
	}
	r = PyUnicode_DecodeUTF8(line, (Py_ssize_t)strlen(line), "surrogateescape");
	free(line);
	return r;
}

static PyMethodDef input_def = { "_input_line", cell_input, METH_VARARGS,
				 "a line from the session's front" };

/* Until the host has read what the cell wrote to stdout and stderr (the pipes hold nothing
 * unread), at most STREAMS_WAIT_US: a frame written then reaches the front after that output,
 * and the host takes frames before streams (host_cell.c), so output written after the frame
 * follows it (a clear_output() and the print after it, in that order). FIONREAD on the pipe's
 * write end; anything else on fd 1 or 2 (a snippet's dup2) just ends the wait. The GIL is
 * let go: a thread of the cell may be the one writing. */
enum { STREAMS_WAIT_US = 100000 };

static void streams_read(void)
{
	uint64_t until = ps_now_us() + STREAMS_WAIT_US;

	Py_BEGIN_ALLOW_THREADS
	for (int fd = 1; fd <= 2; fd++) {
		int unread = 0;

		while (ioctl(fd, FIONREAD, &unread) == 0 && unread > 0 && ps_now_us() < until)
			usleep(20);
	}
	Py_END_ALLOW_THREADS
}

/* pyshim's display(): one bundle (JSON bytes) to the host now, framed on the report channel
 * as TOKEN "D" 8-hex-digit length "\n" JSON, so that it reaches the front while the cell
 * runs; the cell's final report (TOKEN "\n" JSON) comes after every frame. pyshim flushed
 * the streams just before: the host has read them before the frame is written. */
static PyObject *cell_display(PyObject *self, PyObject *arg)
{
	char head[96];
	int fd = ps_interp_report_priv(), n;

	if (!PyBytes_Check(arg)) {
		PyErr_SetString(PyExc_TypeError, "_display_out(bytes)");
		return NULL;
	}
	streams_read();
	n = snprintf(head, sizeof(head), "%sD%08zx\n", ps_interp_report_token(),
		     (size_t)PyBytes_GET_SIZE(arg));
	if (fd >= 0 && n > 0 && (size_t)n < sizeof(head) &&
	    ps_write_all(fd, head, (size_t)n) == 0)
		(void)ps_write_all(fd, PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg));
	Py_RETURN_NONE;
}

static PyMethodDef display_def = { "_display_out", cell_display, METH_O,
				   "a display bundle to the session's front, now" };

int ps_interp_cell_setup(int report_fd, char *(*line)(const char *prompt, bool password),
			 char *err, size_t errlen)
{
	PyObject *f, *r;

	ps_interp_begin(report_fd);
	input_line = line;
	f = PyCFunction_NewEx(&input_def, NULL, NULL);
	PyObject *d = PyCFunction_NewEx(&display_def, NULL, NULL);
	r = f && d && ps_interp_globals() ?
		ps_interp_shim_call("cell_setup", Py_BuildValue("(OOO)", f, d, ps_interp_globals())) :
		NULL;
	Py_XDECREF(f);
	Py_XDECREF(d);
	if (!r) {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		PyObject *s = v ? PyObject_Str(v) : NULL;
		const char *m = s ? PyUnicode_AsUTF8(s) : NULL;

		snprintf(err, errlen, "pyshim cell_setup: %s", m ? m : "failed");
		Py_XDECREF(s);
		Py_XDECREF(t);
		Py_XDECREF(v);
		Py_XDECREF(tb);
		PyErr_Clear();
		return -1;
	}
	Py_DECREF(r);
	return 0;
}

/* (report bytes, exit code) from pyshim into the channel; the fallback when even that fails. */
static int write_answer(PyObject *r, int report_fd)
{
	static const char fallback[] =
		"{\"exception\": {\"type\": \"PysnipInternalError\", \"message\": \"pyshim could not "
		"build the cell's report\", \"traceback\": []}, \"denials\": [], \"exit\": "
		"\"exception\", \"system_exit_code\": null, \"memory_error\": false, \"result\": null, "
		"\"display\": []}";
	int rc = 1;

	if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 &&
	    PyBytes_Check(PyTuple_GET_ITEM(r, 0))) {
		PyObject *b = PyTuple_GET_ITEM(r, 0);

		rc = (int)PyLong_AsLong(PyTuple_GET_ITEM(r, 1));
		ps_interp_write_report(report_fd, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
	} else {
		PyErr_Clear();
		ps_interp_write_report(report_fd, fallback, strlen(fallback));
	}
	Py_XDECREF(r);
	return rc;
}

int ps_interp_cell_threads(void)
{
	PyThreadState *me = PyThreadState_Get();
	int n = 0;

	for (PyThreadState *t = PyInterpreterState_ThreadHead(me->interp); t;
	     t = PyThreadState_Next(t))
		n += t != me;
	return n;
}

/* The cell's non-daemon threads joined (as at interpreter exit): an exception there (an
 * interrupt while joining) is the cell's when it has none of its own. */
static PyObject *join_threads(PyObject *exc)
{
	PyObject *r = ps_interp_shim_call("cell_join_threads", PyTuple_New(0));

	if (r) {
		Py_DECREF(r);
		return exc;
	}
	if (exc) {
		PyErr_Clear();
		return exc;
	}
	return ps_interp_fetch_exception();
}

int ps_interp_cell_run(const char *code, size_t len, unsigned long count, int report_fd)
{
	PyObject *globals = ps_interp_globals();
	PyObject *src = NULL, *parts = NULL, *value = NULL, *exc, *r;
	bool has_value = false;

	ps_audit_denials_reset();
	if (!globals)
		return write_answer(NULL, report_fd);
	src = PyMemoryView_FromMemory((char *)code, (Py_ssize_t)len, PyBUF_READ);
	if (memchr(code, '\0', len))
		PyErr_SetString(PyExc_ValueError, "source code string cannot contain null bytes");
	else if (src)
		parts = ps_interp_shim_call("cell_compile", Py_BuildValue("(O)", src));
	/* Both halves are evaluated here, with no pyshim frame under the cell's code. */
	if (parts && PyTuple_Check(parts) && PyTuple_GET_SIZE(parts) == 2) {
		PyObject *body = PyTuple_GET_ITEM(parts, 0), *expr = PyTuple_GET_ITEM(parts, 1);
		PyObject *b = PyEval_EvalCode(body, globals, globals);

		if (b && expr != Py_None) {
			value = PyEval_EvalCode(expr, globals, globals);
			has_value = value != NULL;
		}
		Py_XDECREF(b);
	}
	exc = join_threads(ps_interp_fetch_exception());
	ps_interp_restore_for_report();
	/* A cell out of memory is rolled back (session/host.c): its state may go now, so that
	 * the report can be built. */
	if (exc && PyErr_GivenExceptionMatches(exc, PyExc_MemoryError))
		PyDict_Clear(globals);
	int threads = ps_interp_cell_threads();

	r = ps_interp_cell_plain_end(exc, value, count, threads);
	if (!r && !PyErr_Occurred())
		r = ps_interp_shim_call("cell_finish",
					Py_BuildValue("(OOOOOki)", exc ? exc : Py_None,
						      src ? src : Py_None,
						      ps_audit_raised_by_hook(exc) ? Py_True : Py_False,
						      value ? value : Py_None,
						      has_value ? Py_True : Py_False, count, threads));
	Py_XDECREF(exc);
	Py_XDECREF(value);
	Py_XDECREF(parts);
	Py_XDECREF(src);
	return write_answer(r, report_fd);
}

void ps_interp_cell_rehearse(void)
{
	PyObject *r = ps_interp_shim_call("cell_rehearse", PyTuple_New(0));

	Py_XDECREF(r);
	PyErr_Clear();
}

int ps_interp_cell_query(const char *kind, const char *code, size_t len, size_t cursor,
			 int report_fd)
{
	PyObject *globals = ps_interp_globals();
	PyObject *r = globals ? ps_interp_shim_call("cell_query",
						    Py_BuildValue("(ss#nO)", kind, code,
								  (Py_ssize_t)len, (Py_ssize_t)cursor,
								  globals))
			      : NULL;

	ps_audit_denials_reset();
	return write_answer(r, report_fd);
}

/* fork() as os.fork() does it (the interpreter's locks and at-fork hooks on both sides),
 * without os.fork's audit event: the holder's own C code forks, never the cell. */
pid_t ps_interp_fork(void)
{
	pid_t pid;

	PyOS_BeforeFork();
	pid = fork();
	if (pid == 0)
		PyOS_AfterFork_Child();
	else
		PyOS_AfterFork_Parent();
	return pid;
}
