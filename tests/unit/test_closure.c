/* The generated closure table: sorted (the lookup is a binary search), every entry found by
 * its own name, and a lookup by a dotted name's first part matches that part only. */
#include <stdbool.h>

#include "python/closure.h"
#include "harness.h"

static bool has_dep(const struct ps_closure_entry *e, const char *dep)
{
	for (size_t k = 0; e && k < e->n_deps; k++)
		if (!strcmp(ps_closure_names[e->deps[k]], dep))
			return true;
	return false;
}

int main(void)
{
	const struct ps_closure_entry *e;

	CHECK(ps_closure_table_len > 200);	/* every top-level stdlib module */
	for (size_t i = 1; i < ps_closure_table_len; i++)
		CHECK(strcmp(ps_closure_table[i - 1].name, ps_closure_table[i].name) < 0);
	for (size_t i = 0; i < ps_closure_table_len; i++) {
		const char *n = ps_closure_table[i].name;

		CHECK(ps_closure_find(n, strlen(n)) == &ps_closure_table[i]);
		CHECK(ps_closure_name_index(n) >= 0);	/* every key is a name too */
		for (size_t k = 0; k < ps_closure_table[i].n_deps; k++)
			CHECK(ps_closure_table[i].deps[k] < ps_closure_names_len);
	}
	for (size_t i = 1; i < ps_closure_names_len; i++)
		CHECK(strcmp(ps_closure_names[i - 1], ps_closure_names[i]) < 0);
	for (size_t i = 0; i < ps_closure_names_len; i++)
		CHECK(ps_closure_name_index(ps_closure_names[i]) == (long)i);
	CHECK(ps_closure_name_index("no_such_module") == -1);
	/* "json.decoder": the first part, "json", whose closure holds _json and re */
	e = ps_closure_find("json.decoder", strcspn("json.decoder", "."));
	CHECK(e && !strcmp(e->name, "json"));
	CHECK(has_dep(e, "_json") && has_dep(e, "re"));
	/* a prefix of a name is not that name; a name not in the stdlib is not found */
	CHECK(ps_closure_find("jso", 3) == NULL);
	CHECK(ps_closure_find("jsonx", 5) == NULL);
	CHECK(ps_closure_find("no_such_module", 14) == NULL);
	CHECK(ps_closure_find("", 0) == NULL);
	/* modules that import nothing have an empty list, not a missing one */
	e = ps_closure_find("math", 4);
	CHECK(e && e->n_deps == 0);
	return ps_test_done("test_closure");
}
