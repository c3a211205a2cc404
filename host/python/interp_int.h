/* Internal to python/: what interp_cell.c (session cells) shares with interp.c (one run). */
#ifndef PS_INTERP_INT_H
#define PS_INTERP_INT_H

#include <Python.h>

#include "interp.h"

/* Call pyshim's function name with args (stolen); new reference or NULL with an exception. */
PyObject *ps_interp_shim_call(const char *name, PyObject *args);
/* The pending exception, normalised, its traceback attached (new ref), or NULL. */
PyObject *ps_interp_fetch_exception(void);
/* Undo what the code may have left broken that building a report needs (tracer, recursion). */
void ps_interp_restore_for_report(void);
PyObject *ps_interp_cell_plain_end(PyObject *exc, PyObject *value, unsigned long count,
				   int threads);
/* The report behind the run's token, on the private copy of the channel first. */
void ps_interp_write_report(int report_fd, const char *buf, size_t len);
/* The run's report token, and the private copy of the report channel (-1: none). */
const char *ps_interp_report_token(void);
int ps_interp_report_priv(void);
/* __main__'s dict made by ps_interp_begin (borrowed), or NULL. */
PyObject *ps_interp_globals(void);
/* pyshim's namespace (borrowed). */
PyObject *ps_interp_shim(void);

#endif
