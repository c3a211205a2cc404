/* The embedded interpreter: initialised once in the parent (isolated config, audit hook first,
 * dangerous built-ins removed, sys.path pinned, pyshim loaded, optionally every allowed module
 * pre-imported and frozen), then used by each forked worker to run one snippet.
 *
 * The snippet runs from C, at the bottom of the Python stack: no pyshim frame sits under it,
 * so frame walking from the snippet finds nothing of the host's to tamper with. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "audit.h"
#include "closure.h"
#include "interp.h"
#include "interp_int.h"
#include "util/util.h"

extern const unsigned char ps_pyshim_blob[], ps_pyshim_blob_end[];

static struct {
	bool ready;
	char prefix[PATH_MAX];
	char stdlib[PATH_MAX];
	char dynload[PATH_MAX];
	char scratch[PATH_MAX];
	PyObject *shim;		/* pyshim's namespace (in no sys.modules entry) */
	PyObject *display;	/* pyshim/display.py's own namespace (the snippet can reach it) */
	PyObject *plain_report;	/* its report of a run that finished with nothing to say */
	int recursion_limit;	/* as init left it: the snippet may lower it, finish() needs it */
	bool lib_env;		/* the policy has library paths: their thread and backend settings */
	/* random's fork hook, held back by pyshim's preimport: random._inst and the C seed
	 * method it runs (ps_interp_after_fork), or NULL */
	PyObject *random_inst, *random_seed, *gauss_next;
} st;

/* Written when even the report cannot be built (memory exhausted): no allocation needed. */
static const char fallback_report[] =
	"{\"exception\": {\"type\": \"MemoryError\", \"message\": \"\", \"traceback\": []}, "
	"\"denials\": [], \"exit\": \"exception\", \"system_exit_code\": null, "
	"\"memory_error\": true}";

/* pyshim itself failed: say so rather than guess. */
static const char fallback_internal[] =
	"{\"exception\": {\"type\": \"PysnipInternalError\", \"message\": \"pyshim could not "
	"build the report\", \"traceback\": []}, \"denials\": [], \"exit\": \"exception\", "
	"\"system_exit_code\": null, \"memory_error\": false}";

const char *ps_interp_stdlib_dir(void)
{
	return st.stdlib;
}

const char *ps_interp_dynload_dir(void)
{
	return st.dynload;
}

/* The prefix of the libpython we are linked with (.../lib/.../libpython3.11.so -> ...), so
 * sys.path never depends on PATH or on which python3 happens to be found first. */
static int find_prefix(char *err, size_t errlen)
{
	Dl_info info;
	char real[PATH_MAX], landmark[PATH_MAX + 32];
	char *lib = NULL;
	if (st.prefix[0])	/* found already (ps_interp_locate in the parent) */
		return 0;
#ifdef PS_PY_PREFIX
	/* libpython linked statically into this binary: the prefix it was built for. (dladdr
	 * would name the executable, which may be /proc/self/exe and unreadable to us.) */
	snprintf(real, sizeof(real), "%s", PS_PY_PREFIX);
	lib = real + strlen(real);
	(void)info;
#else
	if (!dladdr((void *)Py_InitializeFromConfig, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, real)) {
		snprintf(err, errlen, "interp: dladdr(Py_InitializeFromConfig): cannot locate libpython");
		return -1;
	}
	lib = strstr(real, "/lib/");
#endif
	if (!lib) {
		snprintf(err, errlen, "interp: libpython %s is not under a lib/ directory", real);
		return -1;
	}
	*lib = '\0';
	snprintf(st.prefix, sizeof(st.prefix), "%s", real[0] ? real : "/");
	snprintf(landmark, sizeof(landmark), "%s/lib/python%d.%d/os.py", real, PY_MAJOR_VERSION,
		 PY_MINOR_VERSION);
	struct stat sb;
	if (stat(landmark, &sb) < 0) {
		snprintf(err, errlen, "interp: stat(%s): no stdlib next to libpython", landmark);
		st.prefix[0] = '\0';
		return -1;
	}
	return 0;
}

int ps_interp_locate(char *err, size_t errlen)
{
	int n;

	if (find_prefix(err, errlen) < 0)
		return -1;
	n = snprintf(st.stdlib, sizeof(st.stdlib), "%s/lib/python%d.%d",
		     strcmp(st.prefix, "/") ? st.prefix : "", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	if (n < 0 || (size_t)n >= sizeof(st.stdlib) ||
	    snprintf(st.dynload, sizeof(st.dynload), "%s/lib-dynload", st.stdlib) >=
		    (int)sizeof(st.dynload)) {
		snprintf(err, errlen, "interp: stdlib path under %s is too long", st.prefix);
		return -1;
	}
	return 0;
}

/* Built-in modules the Python layer removes: a filtered copy of PyImport_Inittab. Those the
 * policy's libraries may load (modules.internal: pandas imports subprocess, which needs
 * _posixsubprocess) stay; the import checks keep the snippet from them. */
static int filter_inittab(const struct ps_policy *p)
{
	static struct _inittab *copy;
	size_t n = 0, k = 0;
	if (copy)
		return 0;
	while (PyImport_Inittab[n].name)
		n++;
	copy = calloc(n + 1, sizeof(*copy));
	if (!copy)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!ps_audit_denied_module(PyImport_Inittab[i].name) ||
		    (p && ps_strlist_has(&p->modules_internal, PyImport_Inittab[i].name)))
			copy[k++] = PyImport_Inittab[i];
	PyImport_Inittab = copy;
	return 0;
}

static int start_python(char *err, size_t errlen)
{
	PyConfig c;
	PyStatus s;
	wchar_t *home = NULL;
	PyConfig_InitIsolatedConfig(&c);
	c.site_import = 0;
	c.user_site_directory = 0;
	c.write_bytecode = 0;
	c.safe_path = 1;
	c.parse_argv = 0;
	c.install_signal_handlers = 1;	/* as python3 does: SIGPIPE/SIGXFSZ ignored, SIGINT raises */
	c.buffered_stdio = 1;		/* pyshim flushes at exit */
	home = Py_DecodeLocale(st.prefix, NULL);
	wchar_t *argv[] = { L"<snippet>" };
	s = home ? PyConfig_SetString(&c, &c.home, home) : PyStatus_NoMemory();
	if (!PyStatus_Exception(s))
		s = PyConfig_SetString(&c, &c.stdio_encoding, L"utf-8");
	/* surrogateescape: bytes that are not UTF-8 go through stdin -> stdout unchanged */
	if (!PyStatus_Exception(s))
		s = PyConfig_SetString(&c, &c.stdio_errors, L"surrogateescape");
	/* an absolute program name: getpath must not search PATH (for "<snippet>") */
	if (!PyStatus_Exception(s))
		s = PyConfig_SetString(&c, &c.program_name, L"/proc/self/exe");
	if (!PyStatus_Exception(s))
		s = PyConfig_SetArgv(&c, 1, argv);
	if (!PyStatus_Exception(s)) {
		/* posix.environ (and so os.environ) is built from the C environment during init:
		 * build it from nothing, so the host's variables (tokens, paths) never reach the
		 * snippet; pyshim sets the few a run needs. The host's own C code keeps its
		 * environment; the worker clears it before the snippet (ps_interp_run). */
		extern char **environ;
		char **host_env = environ;
		static char *no_env[] = { NULL };
		environ = no_env;
		s = Py_InitializeFromConfig(&c);
		environ = host_env;
	}
	PyConfig_Clear(&c);
	PyMem_RawFree(home);
	if (PyStatus_Exception(s)) {
		snprintf(err, errlen, "interp: Py_InitializeFromConfig: %s%s%s",
			 s.func ? s.func : "", s.func ? ": " : "", s.err_msg ? s.err_msg : "failed");
		return -1;
	}
	return 0;
}

/* sys.path = the stdlib, lib-dynload, and the policy's paths: nothing else. */
static int pin_sys_path(const struct ps_interp_opts *o, char *err, size_t errlen)
{
	PyObject *sp = PySys_GetObject("platlibdir");	/* borrowed */
	const char *platlib = sp && PyUnicode_Check(sp) ? PyUnicode_AsUTF8(sp) : "lib";
	int n1 = snprintf(st.stdlib, sizeof(st.stdlib), "%s/%s/python%d.%d",
			  strcmp(st.prefix, "/") ? st.prefix : "", platlib ? platlib : "lib",
			  PY_MAJOR_VERSION, PY_MINOR_VERSION);
	int n2 = snprintf(st.dynload, sizeof(st.dynload), "%s/lib-dynload", st.stdlib);
	if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof(st.stdlib) ||
	    (size_t)n2 >= sizeof(st.dynload)) {
		snprintf(err, errlen, "interp: stdlib path under %s is too long", st.prefix);
		return -1;
	}
	PyObject *path = Py_BuildValue("[ss]", st.stdlib, st.dynload);
	const struct ps_strlist *extra = o->policy ? &o->policy->python_paths : NULL;
	for (size_t i = 0; path && extra && i < extra->n; i++) {
		PyObject *p = PyUnicode_DecodeFSDefault(extra->items[i]);
		if (!p || PyList_Append(path, p) < 0)
			Py_CLEAR(path);
		Py_XDECREF(p);
	}
	if (!path || PySys_SetObject("path", path) < 0) {
		Py_XDECREF(path);
		PyErr_Clear();
		snprintf(err, errlen, "interp: setting sys.path failed");
		return -1;
	}
	Py_DECREF(path);
	return 0;
}

static PyMethodDef denials_def = { "_denials", ps_audit_denials, METH_NOARGS,
				   "denials recorded by the audit hook" };

/* Execute each marshalled pyshim module, in order, in one private namespace; display.py in one
 * of its own: the snippet calls display() and can reach that function's globals, so they
 * must lead nowhere else (the shim reads display's namespace, never the other way). */
static int load_pyshim(const struct ps_interp_opts *o)
{
	PyObject *mods = PyMarshal_ReadObjectFromString(
		(const char *)ps_pyshim_blob, (Py_ssize_t)(ps_pyshim_blob_end - ps_pyshim_blob));
	if (!mods || !PyList_Check(mods))
		goto fail;
	/* a private copy of builtins: a snippet that rebinds builtins.isinstance or str cannot
	 * steer how its report is built */
	st.shim = Py_BuildValue("{sNsssN}", "_denials", PyCFunction_NewEx(&denials_def, NULL, NULL),
				"__name__", "pysnip_shim", "__builtins__",
				PyDict_Copy(PyEval_GetBuiltins()));
	st.display = Py_BuildValue("{sssN}", "__name__", "pysnip_display", "__builtins__",
				   PyDict_Copy(PyEval_GetBuiltins()));
	if (!st.shim || !st.display || PyDict_SetItemString(st.shim, "_display", st.display) < 0)
		goto fail;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(mods); i++) {
		PyObject *item = PyList_GET_ITEM(mods, i);
		PyObject *name = PyTuple_GetItem(item, 0);
		PyObject *code = PyTuple_GetItem(item, 1);
		PyObject *ns = name && PyUnicode_Check(name) &&
				       PyUnicode_CompareWithASCIIString(name, "display") == 0 ?
				       st.display : st.shim;
		PyObject *r = code ? PyEval_EvalCode(code, ns, ns) : NULL;
		if (!r)
			goto fail;
		Py_DECREF(r);
	}
	Py_DECREF(mods);
	/* display() as in a notebook, and the cap on what it may hold (the host counts again) */
	PyObject *f = PyDict_GetItemString(st.display, "display");	/* borrowed */
	PyObject *cap = PyLong_FromUnsignedLongLong(o->policy ? o->policy->limits.output_bytes
							      : 8u << 20);
	if (!f || !cap || PyDict_SetItemString(st.display, "MAX_BYTES", cap) < 0 ||
	    PyDict_SetItemString(PyEval_GetBuiltins(), "display", f) < 0) {
		Py_XDECREF(cap);
		return -1;
	}
	Py_DECREF(cap);
	return 0;
fail:
	Py_XDECREF(mods);
	return -1;
}

static PyObject *shim_call(const char *name, PyObject *args)
{
	PyObject *f = st.shim ? PyDict_GetItemString(st.shim, name) : NULL;
	if (!f || !args) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_RuntimeError, "pyshim has no %s()", name);
		Py_XDECREF(args);
		return NULL;
	}
	PyObject *r = PyObject_CallObject(f, args);
	Py_DECREF(args);
	return r;
}

/* Does importing name load threading (closure.h)? */
static bool imports_threading(const char *name)
{
	long t = ps_closure_name_index("threading");
	const struct ps_closure_entry *e = ps_closure_find(name, strcspn(name, "."));

	if (!strcmp(name, "threading"))
		return true;
	for (size_t k = 0; e && t >= 0 && k < e->n_deps; k++)
		if (e->deps[k] == t)
			return true;
	return false;
}

/* What a zygote pre-imports: the allowlist, but for the modules that load threading. Its
 * fork hook (threading._after_fork) would run in every worker, and its first run in a fork
 * copies ~110 pages of the zygote's heap (~0.5 ms and 440 kB a worker, measured) for the few
 * snippets that use threads or queue; those import them on first use. */
static PyObject *module_list(const struct ps_interp_opts *o)
{
	PyObject *mods = PyList_New(0);
	for (size_t i = 0; mods && o->modules && i < o->modules->n; i++) {
		if (imports_threading(o->modules->items[i]))
			continue;
		PyObject *m = PyUnicode_FromString(o->modules->items[i]);
		if (!m || PyList_Append(mods, m) < 0)
			Py_CLEAR(mods);
		Py_XDECREF(m);
	}
	return mods;
}

static int setup_shim(const struct ps_interp_opts *o)
{
	PyObject *imp = NULL, *finder = NULL, *r = NULL;
	bool ok = true;
	if (o->python_layer) {
		PyObject *orig = PyDict_GetItemString(PyEval_GetBuiltins(), "__import__");
		imp = orig ? ps_audit_import_func(orig) : NULL;
		finder = ps_audit_finder();
		ok = imp && finder;
	}
	if (ok)
		r = shim_call("setup", Py_BuildValue("(OOO)", o->python_layer ? Py_True : Py_False,
						    imp ? imp : Py_None, finder ? finder : Py_None));
	/* made while nothing is denied yet: what finish() answers for a plain end (bytes) */
	if (r && !(st.plain_report = shim_call("_report", Py_BuildValue("(OOsOO)", Py_None,
									    Py_None, "ok", Py_None,
									    Py_False))))
		Py_CLEAR(r);
	/* the closure before the import hooks see their first import; guards go in before any
	 * other module (os) copies the functions they replace */
	if (r && o->python_layer &&
	    (ps_audit_build_closure(o->modules) < 0 || ps_guard_install() < 0))
		Py_CLEAR(r);
	if (r && o->preimport) {
		PyObject *mods = module_list(o);
		Py_SETREF(r, mods ? shim_call("preimport", Py_BuildValue("(Os)", mods,
									    ps_mpl_cache_dir())) : NULL);
		Py_XDECREF(mods);
		/* None: random was not imported */
		if (r && r != Py_None) {
			if (PyArg_ParseTuple(r, "OO", &st.random_inst, &st.random_seed) &&
			    (st.gauss_next = PyUnicode_InternFromString("gauss_next"))) {
				Py_INCREF(st.random_inst);
				Py_INCREF(st.random_seed);
			} else {
				st.random_inst = st.random_seed = NULL;
				Py_CLEAR(r);
			}
		}
	}
	Py_XDECREF(imp);
	Py_XDECREF(finder);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

static void describe_error(const char *what, char *err, size_t errlen)
{
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	PyObject *s = v ? PyObject_Str(v) : NULL;
	const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
	snprintf(err, errlen, "interp: %s: %s: %s", what,
		 t ? ((PyTypeObject *)t)->tp_name : "error", msg ? msg : "(no message)");
	Py_XDECREF(s);
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
	PyErr_Clear();
}

int ps_interp_init(const struct ps_interp_opts *o, char *err, size_t errlen)
{
	if (st.ready) {
		snprintf(err, errlen, "interp: ps_interp_init called twice");
		return -1;
	}
	if (find_prefix(err, errlen) < 0)
		return -1;
	/* The hook goes in before the interpreter exists, so nothing ever runs unhooked; it stays
	 * inert until activated (and is never activated with the python layer off). */
	if (ps_audit_install() < 0) {
		snprintf(err, errlen, "interp: PySys_AddAuditHook failed");
		return -1;
	}
	if (o->python_layer && filter_inittab(o->policy) < 0) {
		snprintf(err, errlen, "interp: filtering PyImport_Inittab: out of memory");
		return -1;
	}
	/* Read by OpenBLAS and libgomp when they load (numpy, Pillow's libimagequant), from the
	 * C environment: one thread each, before anything can load them. The snippet's own
	 * environment gets them again (pyshim begin). */
	setenv("OPENBLAS_NUM_THREADS", "1", 1);
	setenv("OMP_NUM_THREADS", "1", 1);
	if (start_python(err, errlen) < 0 || pin_sys_path(o, err, errlen) < 0)
		return -1;
	if (o->python_layer && ps_audit_configure(o, st.stdlib, st.dynload, err, errlen) < 0)
		return -1;
	if (load_pyshim(o) < 0) {
		describe_error("loading pyshim", err, errlen);
		return -1;
	}
	if (setup_shim(o) < 0) {
		describe_error("pyshim setup", err, errlen);
		return -1;
	}
	if (o->python_layer)
		ps_audit_activate();
	st.recursion_limit = Py_GetRecursionLimit();
	st.lib_env = o->policy && o->policy->python_paths.n > 0;
	st.ready = true;
	return 0;
}

/* numpy's global RandomState was seeded once, in the zygote: a fork copies it, so every
 * worker would draw the same numbers. Reseed it from the kernel's randomness, as random's. */
static int reseed_numpy(void)
{
	PyObject *mods = PySys_GetObject("modules");	/* borrowed */
	PyObject *npr = mods && PyDict_Check(mods) ? PyDict_GetItemString(mods, "numpy.random")
						   : NULL;
	PyObject *r;

	if (!npr)
		return 0;
	r = PyObject_CallMethod(npr, "seed", NULL);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

int ps_interp_after_fork(char *err, size_t errlen)
{
	PyOS_AfterFork_Child();
	if (reseed_numpy() < 0) {
		describe_error("reseeding numpy.random after fork", err, errlen);
		return -1;
	}
	if (!st.random_inst)
		return 0;
	/* What random's own fork hook, Random.seed(), does with no seed, without its Python:
	 * the C seed from the kernel's randomness, then gauss_next = None. */
	PyObject *r = PyObject_CallFunctionObjArgs(st.random_seed, st.random_inst, Py_None, NULL);
	if (r && PyObject_SetAttr(st.random_inst, st.gauss_next, Py_None) == 0) {
		Py_DECREF(r);
		return 0;
	}
	Py_XDECREF(r);
	describe_error("reseeding random after fork", err, errlen);
	return -1;
}

void ps_interp_set_scratch(const char *dir)
{
	snprintf(st.scratch, sizeof(st.scratch), "%s", dir);
	ps_audit_set_scratch(dir);
}

/* The pending exception, normalised, with its traceback attached (new ref), or NULL. */
static PyObject *fetch_exception(void)
{
	if (!PyErr_Occurred())
		return NULL;
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (tb && v)
		PyException_SetTraceback(v, tb);
	Py_XDECREF(t);
	Py_XDECREF(tb);
	return v ? v : Py_NewRef(Py_None);
}

/* Compile and run the snippet; returns the exception (new ref) or NULL if it finished.
 * The bytes are compiled as they are, as compile(bytes) would (a coding cookie is honoured,
 * bad UTF-8 is a SyntaxError, a NUL byte compile()'s ValueError), but through the C API:
 * builtins.compile() first builds the whole _ast module's type objects (PyAST_Check), ~1.3 ms
 * of every one-shot run, and a snippet cannot reach what it calls. */
static PyObject *run_snippet(PyObject *globals, const char *src, size_t len)
{
	PyCompilerFlags cf = _PyCompilerFlags_INIT;
	PyObject *code = NULL;

	if (memchr(src, '\0', len))
		PyErr_SetString(PyExc_ValueError, "source code string cannot contain null bytes");
	else
		code = Py_CompileStringExFlags(src, "<snippet>", Py_file_input, &cf, -1);
	if (code) {
		PyObject *r = PyEval_EvalCode(code, globals, globals);
		Py_XDECREF(r);
		Py_DECREF(code);
	}
	return fetch_exception();
}

static char report_token[64];

void ps_interp_set_report_token(const char *token)
{
	snprintf(report_token, sizeof(report_token), "%s", token);
}

/* The report, behind the run's token: the token lives only in C memory, so a snippet that
 * writes its own "report" to the channel cannot make the parent take it. Written to the
 * private copy of the channel first (the snippet may have closed or replaced fd 4 by native
 * means), then to the channel itself. */
static void write_report(int fd, int priv, const char *buf, size_t len)
{
	int fds[] = { priv, fd };
	bool tok = report_token[0];

	for (size_t i = 0; i < PS_ARRAY_LEN(fds); i++) {
		int fl = fds[i] >= 0 ? fcntl(fds[i], F_GETFL) : -1;
		/* token, newline and report in one write: the parent wakes once for it */
		struct iovec iov[] = { { report_token, tok ? strlen(report_token) : 0 },
				       { "\n", tok ? 1 : 0 }, { (void *)buf, len } };

		if (fl < 0)
			continue;
		if (fl & O_NONBLOCK)	/* os.set_blocking(4, False) must not cut the report */
			fcntl(fds[i], F_SETFL, fl & ~O_NONBLOCK);
		if (ps_writev_all(fds[i], iov, 3) == 0)
			return;
	}
}

/* A copy of the report channel at the top of the descriptor table, taken before the snippet
 * runs: out of the way of the snippet's own descriptors and of fd exhaustion. */
static int private_report_fd(int fd)
{
	struct rlimit rl;
	int hi = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64 && rl.rlim_cur < 65536 ?
			 (int)rl.rlim_cur - 1 : 63;
	int priv = fcntl(fd, F_DUPFD_CLOEXEC, hi);
	if (priv < 0)
		priv = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
	return priv;
}

/* What the snippet may have left broken that building the report needs. */
static void restore_for_report(void)
{
	PyEval_SetTrace(NULL, NULL);	/* its tracer or profiler must not watch */
	PyEval_SetProfile(NULL, NULL);
	Py_SetRecursionLimit(st.recursion_limit > 0 ? st.recursion_limit : 1000);
}

/* How many items module.attr holds (a dict or a list: their own count, no __len__ is
 * called), or -1 when it is not there or is something else. */
static Py_ssize_t attr_len(PyObject *mods, const char *module, const char *attr)
{
	PyObject *m = PyDict_GetItemString(mods, module);	/* borrowed */
	PyObject *v = m ? PyObject_GetAttrString(m, attr) : NULL;
	Py_ssize_t n = !v ? -1 : PyDict_Check(v) ? PyDict_GET_SIZE(v) :
		       PyList_Check(v) ? PyList_GET_SIZE(v) : -1;

	Py_XDECREF(v);
	PyErr_Clear();
	return n;
}

/* No thread for finish() to wait for: threading never imported, or only the main thread
 * known to it and no exit hook registered with it (what its _shutdown() would attend to). */
static bool no_threads(PyObject *mods)
{
	if (!PyDict_GetItemString(mods, "threading"))
		return true;
	return attr_len(mods, "threading", "_active") == 1 &&
	       attr_len(mods, "threading", "_limbo") == 0 &&
	       attr_len(mods, "threading", "_threading_atexits") == 0;
}

/* No matplotlib figure open (display.py's flush() draws those): pyplot's figure manager,
 * Gcf.figs, empty or pyplot never imported. */
static bool no_figures(PyObject *mods)
{
	PyObject *helpers, *gcf;
	Py_ssize_t n;

	if (!PyDict_GetItemString(mods, "matplotlib.pyplot"))
		return true;
	helpers = PyDict_GetItemString(mods, "matplotlib._pylab_helpers");	/* borrowed */
	gcf = helpers ? PyObject_GetAttrString(helpers, "Gcf") : NULL;
	n = -1;
	if (gcf) {
		PyObject *figs = PyObject_GetAttrString(gcf, "figs");

		n = figs && PyDict_Check(figs) ? PyDict_GET_SIZE(figs) : -1;
		Py_XDECREF(figs);
		Py_DECREF(gcf);
	}
	PyErr_Clear();
	return n == 0;
}

/* No file in output/ for files.py to collect: no scratch, no output/, or an empty one. */
static bool no_outputs(void)
{
	char out[PATH_MAX + 8];
	struct dirent *d;
	DIR *dir;
	bool empty = true;

	if (!st.scratch[0])
		return true;
	snprintf(out, sizeof(out), "%s/output", st.scratch);
	dir = opendir(out);
	if (!dir)
		return errno == ENOENT;
	while (empty && (d = readdir(dir)))
		empty = !strcmp(d->d_name, ".") || !strcmp(d->d_name, "..");
	closedir(dir);
	return empty;
}

/* The common end: nothing for finish() to describe, no thread to wait for, nothing shown,
 * no figure open, no output file. */
static bool finished_plainly(PyObject *exc)
{
	PyObject *mods = PySys_GetObject("modules");	/* borrowed */

	if (exc || ps_audit_denial_count() != 0 || !mods || !PyDict_Check(mods) ||
	    !no_threads(mods))
		return false;
	/* displayed bundles and open figures are part of the report (pyshim/display.py) */
	PyObject *shown = st.display ? PyDict_GetItemString(st.display, "_outputs") : NULL;
	if (!shown || !PyList_Check(shown) || PyList_GET_SIZE(shown) || !no_figures(mods))
		return false;
	/* files left in output/ are part of the report (pyshim/files.py) */
	return no_outputs();
}

/* finish()'s answer for that end without its Python (~0.2 ms of a served run, mostly first
 * writes to the zygote's pages): the report pyshim made for it at setup, the streams flushed as
 * _flush() does. */
static void flush_streams(void)
{
	static const char *const streams[] = { "stdout", "stderr", "__stdout__", "__stderr__" };
	PyObject *done[PS_ARRAY_LEN(streams)];

	for (size_t i = 0; i < PS_ARRAY_LEN(streams); i++) {
		PyObject *s = PySys_GetObject(streams[i]);	/* borrowed */
		PyObject *r = NULL;

		done[i] = s;
		for (size_t k = 0; k < i && s; k++)
			if (done[k] == s)	/* sys.stdout is usually sys.__stdout__ */
				s = NULL;
		if (s && s != Py_None)
			r = PyObject_CallMethod(s, "flush", NULL);
		Py_XDECREF(r);
		PyErr_Clear();
	}
}

static PyObject *plain_report(void)
{
	flush_streams();
	return Py_BuildValue("(Oi)", st.plain_report, 0);
}

/* A session cell's plain end (interp_cell.c): no exception, no value to show, nothing
 * displayed (pyshim/cell.py's _cell["outputs"]), no figure open, no thread left, nothing
 * denied. Its report is the run's plain one with cell_finish()'s fields, made here, the
 * streams flushed: the cell's Python end (~0.3 ms of a cell, cold in its fork) is skipped.
 * NULL when the end is not plain (no error set). */
PyObject *ps_interp_cell_plain_end(PyObject *exc, PyObject *value, unsigned long count,
				   int threads)
{
	PyObject *mods = PySys_GetObject("modules");	/* borrowed */
	PyObject *cell = st.shim ? PyDict_GetItemString(st.shim, "_cell") : NULL;
	PyObject *shown = cell && PyDict_Check(cell) ? PyDict_GetItemString(cell, "outputs") : NULL;
	PyObject *r;
	char tail[160];

	if (exc || (value && value != Py_None) || threads || ps_audit_denial_count() != 0 ||
	    !mods || !PyDict_Check(mods) || !shown || !PyList_Check(shown) ||
	    PyList_GET_SIZE(shown) || !no_figures(mods) || !st.plain_report ||
	    !PyBytes_Check(st.plain_report) || PyBytes_GET_SIZE(st.plain_report) < 2)
		return NULL;
	flush_streams();
	/* as cell_finish(): report[:-1] + ", " + _json({...})[1:] */
	int n = snprintf(tail, sizeof(tail), ", \"result\": null, \"display\": [], "
			 "\"execution_count\": %lu, \"threads_running\": 0}", count);
	Py_ssize_t len = PyBytes_GET_SIZE(st.plain_report) - 1;
	PyObject *b = PyBytes_FromStringAndSize(NULL, len + n);

	if (!b)
		return NULL;
	memcpy(PyBytes_AS_STRING(b), PyBytes_AS_STRING(st.plain_report), (size_t)len);
	memcpy(PyBytes_AS_STRING(b) + len, tail, (size_t)n);
	r = Py_BuildValue("(Ni)", b, 0);
	return r;
}

static struct {
	bool done;
	bool python;		/* the Python half is done (in the zygote, or here) */
	int priv;		/* the report channel's private copy */
	PyObject *globals;	/* the fresh __main__'s, or NULL with the error kept below */
	PyObject *err_type, *err_value, *err_tb;
} begun;

/* The Python half of a run's start: no environment of the host's, a fresh __main__, the
 * scratch directory as TMPDIR and HOME. */
static void begin_python(void)
{
	/* Nothing of the host's environment is left for os.putenv/getenv or a fresh posix. */
	clearenv();
	begun.globals = shim_call("begin", Py_BuildValue("(sO)", st.scratch,
							  st.lib_env ? Py_True : Py_False));
	if (!begun.globals)
		PyErr_Fetch(&begun.err_type, &begun.err_value, &begun.err_tb);
	begun.python = true;
}

void ps_interp_begin_shared(const char *scratch)
{
	ps_interp_set_scratch(scratch);
	begin_python();
}

void ps_interp_begin(int report_fd)
{
	if (begun.done)
		return;
	begun.done = true;
	/* pysnip's channels: the worker's sit between stdio and the report fd */
	for (int fd = 3; fd <= report_fd; fd++)
		ps_audit_protect_fd(fd);
	begun.priv = private_report_fd(report_fd);
	if (begun.priv >= 0)
		ps_audit_protect_fd(begun.priv);
	if (!begun.python)
		begin_python();
}

int ps_interp_run(const char *code, size_t len, int report_fd)
{
	ps_interp_begin(report_fd);
	int priv = begun.priv;
	PyObject *globals = begun.globals;
	if (!globals)
		PyErr_Restore(begun.err_type, begun.err_value, begun.err_tb);
	/* a view, not a copy: a 100 MB snippet must not cost 100 MB more */
	PyObject *src = globals ? PyMemoryView_FromMemory((char *)code, (Py_ssize_t)len, PyBUF_READ)
				: NULL;
	PyObject *exc = NULL;
	if (src)
		exc = run_snippet(globals, code, len);
	else
		exc = fetch_exception();
	restore_for_report();
	if (exc && PyErr_GivenExceptionMatches(exc, PyExc_MemoryError) && globals)
		PyDict_Clear(globals);	/* give the memory back before building the report */
	PyObject *r = finished_plainly(exc) ?
		plain_report() :
		shim_call("finish", Py_BuildValue("(OOO)", exc ? exc : Py_None, src ? src : Py_None,
						  ps_audit_raised_by_hook(exc) ? Py_True : Py_False));
	int rc = 1;
	if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 &&
	    PyBytes_Check(PyTuple_GET_ITEM(r, 0))) {
		PyObject *b = PyTuple_GET_ITEM(r, 0);
		rc = (int)PyLong_AsLong(PyTuple_GET_ITEM(r, 1));
		write_report(report_fd, priv, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
	} else {
		bool oom = PyErr_ExceptionMatches(PyExc_MemoryError) ||
			   (exc && PyErr_GivenExceptionMatches(exc, PyExc_MemoryError));
		PyErr_Clear();
		const char *fb = oom ? fallback_report : fallback_internal;
		write_report(report_fd, priv, fb, strlen(fb));
	}
	Py_XDECREF(r);
	Py_XDECREF(exc);
	Py_XDECREF(src);
	Py_XDECREF(globals);
	if (priv >= 0)
		close(priv);	/* the report is written: its end is the channel's EOF */
	return rc;
}

/* For interp_cell.c (session cells): the run's pieces above, shared rather than copied. */
void ps_interp_rehearse_plot(void)
{
	PyObject *r = shim_call("rehearse_plot", PyTuple_New(0));

	Py_XDECREF(r);
	PyErr_Clear();
	ps_audit_denials_reset();
}

PyObject *ps_interp_shim_call(const char *name, PyObject *args)
{
	return shim_call(name, args);
}

PyObject *ps_interp_fetch_exception(void)
{
	return fetch_exception();
}

void ps_interp_restore_for_report(void)
{
	restore_for_report();
}

void ps_interp_write_report(int report_fd, const char *buf, size_t len)
{
	write_report(report_fd, begun.priv, buf, len);
}

const char *ps_interp_report_token(void)
{
	return report_token;
}

int ps_interp_report_priv(void)
{
	return begun.priv;
}

PyObject *ps_interp_globals(void)
{
	return begun.globals;
}

PyObject *ps_interp_shim(void)
{
	return st.shim;
}
