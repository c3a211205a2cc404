/* The import closure of the stdlib: for each top-level module, every module that importing it
 * (and its submodules) loads. Data from pyshim/closure.py, compiled to C at build time: one
 * sorted list of every name, and per top-level module the indexes of its closure in it. */
#ifndef PS_CLOSURE_H
#define PS_CLOSURE_H

#include <stddef.h>
#include <stdint.h>

struct ps_closure_entry {
	const char *name;
	const uint16_t *deps;	/* indexes into ps_closure_names */
	size_t n_deps;
};

extern const char *const ps_closure_names[];		/* sorted, unique */
extern const size_t ps_closure_names_len;
extern const struct ps_closure_entry ps_closure_table[];	/* sorted by name */
extern const size_t ps_closure_table_len;

/* The entry for a top-level module name (its first len bytes), or NULL. */
const struct ps_closure_entry *ps_closure_find(const char *name, size_t len);

/* The index of name in ps_closure_names, or -1. */
long ps_closure_name_index(const char *name);

#endif
