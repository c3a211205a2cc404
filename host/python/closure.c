/* Lookups in the generated closure tables (build/closure_table.c). */
#include "closure.h"

#include <string.h>

const struct ps_closure_entry *ps_closure_find(const char *name, size_t len)
{
	size_t lo = 0, hi = ps_closure_table_len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *n = ps_closure_table[mid].name;
		int c = strncmp(n, name, len);

		if (c == 0)
			c = n[len] ? 1 : 0;
		if (c == 0)
			return &ps_closure_table[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

long ps_closure_name_index(const char *name)
{
	size_t lo = 0, hi = ps_closure_names_len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ps_closure_names[mid], name);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
