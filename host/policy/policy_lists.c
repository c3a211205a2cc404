/* Where policies and allowlists live, string lists, and the stdlib-allow files that
 * become the import allowlist. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"
#include "util/util.h"

#define ALLOW_MAX_BYTES (1024 * 1024)

/* ---- directories ---- */

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* $ENV, else next to the binary (a build tree or a bundle), else the installed copy.
 * Read on every call so tests can point it elsewhere with setenv(); an environment value is
 * copied into buf, since a worker overwrites its environment strings before it runs. */
static const char *data_dir(const char *env, const char *sub, char *buf, size_t len)
{
	const char *e = getenv(env), *exe = ps_exe_dir();

	if (e && *e) {
		snprintf(buf, len, "%s", e);
		return buf;
	}
	if (exe) {
		/* next to the binary, or one up (a build directory such as build-asan/) */
		snprintf(buf, len, "%s/%s", exe, sub);
		if (is_dir(buf))
			return buf;
		snprintf(buf, len, "%s/../%s", exe, sub);
		if (is_dir(buf))
			return buf;
	}
	snprintf(buf, len, "/usr/local/share/pysnip/%s", sub);
	return buf;
}

const char *ps_policy_dir(void)
{
	static char buf[4096];

	return data_dir("PYSNIP_POLICY_DIR", "policies", buf, sizeof(buf));
}

const char *ps_allow_dir(void)
{
	static char buf[4096];

	return data_dir("PYSNIP_ALLOW_DIR", "stdlib-allow", buf, sizeof(buf));
}

/* Decided once, the first time (in the parent, ps_worker_prepare): the worker that seeds a
 * run's font list from it has cleared its environment by then. */
const char *ps_mpl_cache_dir(void)
{
	static char buf[4096];
	static const char *dir;

	if (!dir)
		dir = data_dir("PYSNIP_MPL_CACHE", "mpl-cache", buf, sizeof(buf));
	return dir;
}

/* ---- names ---- */

static bool is_alpha_(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

bool ps_module_name_valid(const char *s)
{
	bool at_start = true;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s == '.') {
			if (at_start)
				return false;
			at_start = true;
		} else if (is_alpha_(*s) || (!at_start && is_digit(*s))) {
			at_start = false;
		} else {
			return false;
		}
	}
	return !at_start;
}

bool ps_policy_name_valid(const char *s)
{
	if (!is_alpha_(*s) && !is_digit(*s))
		return false;
	for (; *s; s++)
		if (!is_alpha_(*s) && !is_digit(*s) && *s != '-')
			return false;
	return true;
}

/* ---- string lists ---- */

void ps_strlist_free(struct ps_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int ps_strlist_push(struct ps_strlist *l, const char *s)
{
	char **items = realloc(l->items, (l->n + 1) * sizeof(*items));
	char *dup;

	if (!items)
		return -ENOMEM;
	l->items = items;
	dup = strdup(s);
	if (!dup)
		return -ENOMEM;
	l->items[l->n++] = dup;
	return 0;
}

bool ps_strlist_has(const struct ps_strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->items[i], s) == 0)
			return true;
	return false;
}

/* ---- the import allowlist ---- */

/* One line of a stdlib-allow file: "# comment", blank, or one module name (a trailing
 * comment is allowed). Returns 0, or -1 if the line is not a module name. */
static int allow_line(char *line, struct ps_strlist *out, const char *file, size_t lineno,
		      char *err, size_t errlen)
{
	char *hash = strchr(line, '#'), *end;

	if (hash)
		*hash = '\0';
	while (*line == ' ' || *line == '\t' || *line == '\r')
		line++;
	end = line + strlen(line);
	while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	if (!*line)
		return 0;
	if (!ps_module_name_valid(line)) {
		snprintf(err, errlen, "%s:%zu: '%s' is not a module name", file, lineno, line);
		return -1;
	}
	if (ps_strlist_push(out, line) < 0) {
		snprintf(err, errlen, "%s:%zu: out of memory", file, lineno);
		return -1;
	}
	return 0;
}

static int read_allow_file(const char *file, struct ps_strlist *out, char *err, size_t errlen)
{
	char *buf, *line, *next;
	size_t len, lineno = 0;
	int ret = ps_read_file(file, &buf, &len);

	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(-ret));
		return -1;
	}
	if (len > ALLOW_MAX_BYTES || memchr(buf, '\0', len)) {
		snprintf(err, errlen, "%s: %s", file,
			 len > ALLOW_MAX_BYTES ? "larger than 1M" : "contains a NUL byte");
		free(buf);
		return -1;
	}
	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (allow_line(line, out, file, ++lineno, err, errlen) < 0) {
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Denying a package denies its submodules too: "xml" takes "xml.dom.minidom" with it. */
static bool denied(const struct ps_strlist *deny, const char *mod)
{
	for (size_t i = 0; i < deny->n; i++) {
		size_t n = strlen(deny->items[i]);

		if (strncmp(mod, deny->items[i], n) == 0 && (mod[n] == '\0' || mod[n] == '.'))
			return true;
	}
	return false;
}

/* Sort, drop duplicates and denied names, in place. */
static void sort_unique(struct ps_strlist *l, const struct ps_strlist *deny)
{
	size_t w = 0;

	if (l->n)
		qsort(l->items, l->n, sizeof(*l->items), cmp_str);
	for (size_t r = 0; r < l->n; r++) {
		if ((w && strcmp(l->items[w - 1], l->items[r]) == 0) || denied(deny, l->items[r]))
			free(l->items[r]);
		else
			l->items[w++] = l->items[r];
	}
	l->n = w;
}

int ps_policy_modules(const struct ps_policy *p, struct ps_strlist *out, char *err, size_t errlen)
{
	struct ps_strlist l = { 0 };
	char file[4096];

	char reason[4200];

	for (size_t i = 0; i < p->module_lists.n; i++) {
		int n = snprintf(file, sizeof(file), "%s/%s.txt", ps_allow_dir(),
				 p->module_lists.items[i]);

		if (n < 0 || (size_t)n >= sizeof(file)) {
			snprintf(err, errlen, "policy %s: field modules.lists[%zu]: path too long",
				 p->path, i);
			goto fail;
		}
		if (read_allow_file(file, &l, reason, sizeof(reason)) < 0) {
			snprintf(err, errlen, "policy %s: field modules.lists[%zu]: %s", p->path, i,
				 reason);
			goto fail;
		}
	}
	for (size_t i = 0; i < p->modules_allow.n; i++) {
		if (ps_strlist_push(&l, p->modules_allow.items[i]) < 0) {
			snprintf(err, errlen, "policy %s: field modules.allow: out of memory",
				 p->path);
			goto fail;
		}
	}
	sort_unique(&l, &p->modules_deny);
	*out = l;
	return 0;
fail:
	ps_strlist_free(&l);
	return -1;
}
