/* The import closure of the stdlib: for each top-level module, every module that importing it
 * (and its submodules) loads. Data from pyshim/closure.py, compiled to C at build time. */
#ifndef PS_CLOSURE_H
#define PS_CLOSURE_H

#include <stddef.h>

struct ps_closure_entry {
	const char *name;
	const char *const *deps;	/* NULL-terminated */
};

extern const struct ps_closure_entry ps_closure_table[];	/* sorted by name */
extern const size_t ps_closure_table_len;

/* The entry for a top-level module name, or NULL. */
const struct ps_closure_entry *ps_closure_find(const char *name, size_t len);

#endif
