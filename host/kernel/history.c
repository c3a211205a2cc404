/* history_request: the cells this kernel ran (store_history), kept in the front as text only
 * (the input, and the text/plain of its result), answered as IPython's history manager does:
 * tail (the last n), range (lines start <= line < stop of a session) and search (a glob over
 * the whole input, fnmatch(3) as SQLite's GLOB, case-sensitive; the last n; unique). One
 * session, numbered 1; session 0 is the current one, as in IPython; older ones have none.
 * Bounded: the oldest entries go past PS_KHIST_MAX entries or PS_KHIST_BYTES of text. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_int.h"

enum { PS_KHIST_MAX = 10000, PS_KHIST_BYTES = 16 << 20, SESSION_NO = 1, DEFAULT_N = 10 };

struct entry {
	int line;
	char *input, *output;	/* output NULL: the cell had no result */
};

struct ps_khistory {
	struct entry *e;	/* oldest first */
	size_t n, cap, bytes;
};

static size_t entry_bytes(const struct entry *x)
{
	return strlen(x->input) + (x->output ? strlen(x->output) : 0);
}

static void drop_oldest(struct ps_khistory *h)
{
	h->bytes -= entry_bytes(&h->e[0]);
	free(h->e[0].input);
	free(h->e[0].output);
	memmove(h->e, h->e + 1, (h->n - 1) * sizeof(*h->e));
	h->n--;
}

void ps_khistory_add(struct ps_khistory **hp, int line, const char *input, const char *output)
{
	struct ps_khistory *h = *hp;
	struct entry x = { .line = line, .input = strdup(input),
			   .output = output ? strdup(output) : NULL };

	if (!h && !(h = *hp = calloc(1, sizeof(*h))))
		goto fail;
	if (!x.input || (output && !x.output))
		goto fail;
	if (entry_bytes(&x) > PS_KHIST_BYTES)
		goto fail;	/* a cell bigger than the whole history is not kept */
	while (h->n && (h->n >= PS_KHIST_MAX || h->bytes + entry_bytes(&x) > PS_KHIST_BYTES))
		drop_oldest(h);
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct entry *ne = realloc(h->e, cap * sizeof(*ne));

		if (!ne)
			goto fail;
		h->e = ne;
		h->cap = cap;
	}
	h->bytes += entry_bytes(&x);
	h->e[h->n++] = x;
	return;
fail:
	free(x.input);
	free(x.output);
}

void ps_khistory_free(struct ps_khistory *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->e[i].input);
		free(h->e[i].output);
	}
	free(h->e);
	free(h);
}

/* [session, line, input] or, with output, [session, line, [input, output]] */
static cJSON *item(const struct entry *x, bool output)
{
	cJSON *a = cJSON_CreateArray();

	cJSON_AddItemToArray(a, cJSON_CreateNumber(SESSION_NO));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(x->line));
	if (output) {
		cJSON *io = cJSON_CreateArray();

		cJSON_AddItemToArray(io, cJSON_CreateString(x->input));
		cJSON_AddItemToArray(io, x->output ? cJSON_CreateString(x->output)
						   : cJSON_CreateNull());
		cJSON_AddItemToArray(a, io);
	} else {
		cJSON_AddItemToArray(a, cJSON_CreateString(x->input));
	}
	return a;
}

/* The request's arguments, each checked for its type: absent is its default. */
struct args {
	const char *type, *pattern;
	bool output, unique;
	double session, start, stop, n;
	bool has_n, has_stop;
};

static int get_bool(const cJSON *b, const char *name, bool *out, char *err, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v)) {
		snprintf(err, len, "history_request: %s must be true or false", name);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

static int get_int(const cJSON *b, const char *name, double *out, bool *has, char *err,
		   size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e15) {
		snprintf(err, len, "history_request: %s must be a whole number", name);
		return -1;
	}
	*out = v->valuedouble;
	if (has)
		*has = true;
	return 0;
}

static int parse_args(const cJSON *b, struct args *a, char *err, size_t len)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "hist_access_type");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(b, "pattern");

	*a = (struct args){ .start = 0, .n = DEFAULT_N };
	if (!cJSON_IsString(t) || (strcmp(t->valuestring, "tail") &&
				   strcmp(t->valuestring, "range") &&
				   strcmp(t->valuestring, "search"))) {
		snprintf(err, len, "history_request: hist_access_type must be \"tail\", \"range\" "
			 "or \"search\"");
		return -1;
	}
	a->type = t->valuestring;
	if (p && !cJSON_IsNull(p) && !cJSON_IsString(p)) {
		snprintf(err, len, "history_request: pattern must be a string");
		return -1;
	}
	a->pattern = cJSON_IsString(p) ? p->valuestring : "*";
	if (get_bool(b, "output", &a->output, err, len) < 0 ||
	    get_bool(b, "unique", &a->unique, err, len) < 0 ||
	    get_bool(b, "raw", &(bool){ false }, err, len) < 0 ||
	    get_int(b, "session", &a->session, NULL, err, len) < 0 ||
	    get_int(b, "start", &a->start, NULL, err, len) < 0 ||
	    get_int(b, "stop", &a->stop, &a->has_stop, err, len) < 0 ||
	    get_int(b, "n", &a->n, &a->has_n, err, len) < 0)
		return -1;
	if (a->n < 0) {
		snprintf(err, len, "history_request: n must not be negative");
		return -1;
	}
	return 0;
}

/* Search with unique keeps the latest entry of each input: one already picked (the scan goes
 * from the newest) with the same input hides entry i. */
static bool picked_same(const struct ps_khistory *h, const size_t *pick, size_t got, size_t i)
{
	for (size_t j = 0; j < got; j++)
		if (!strcmp(h->e[pick[j]].input, h->e[i].input))
			return true;
	return false;
}

/* The entries a request selects, oldest first. */
static cJSON *select_entries(const struct ps_khistory *h, const struct args *a)
{
	cJSON *out = cJSON_CreateArray();
	size_t count = h ? h->n : 0, from = 0;

	if (!count)
		return out;
	if (!strcmp(a->type, "tail")) {
		from = (double)count > a->n ? count - (size_t)a->n : 0;
		for (size_t i = from; i < count; i++)
			cJSON_AddItemToArray(out, item(&h->e[i], a->output));
	} else if (!strcmp(a->type, "range")) {
		if (a->session != 0 && a->session != SESSION_NO)
			return out;	/* no earlier session is kept */
		for (size_t i = 0; i < count; i++)
			if (h->e[i].line >= a->start && (!a->has_stop || a->stop <= 0 ||
							 h->e[i].line < a->stop))
				cJSON_AddItemToArray(out, item(&h->e[i], a->output));
	} else {	/* search: the last n matches (all without n), oldest first */
		size_t want = a->has_n ? (size_t)a->n : count, got = 0;
		size_t *pick = malloc(count * sizeof(*pick));

		for (size_t i = count; pick && i-- > 0 && got < want;)
			if (!fnmatch(a->pattern, h->e[i].input, 0) &&
			    !(a->unique && picked_same(h, pick, got, i)))
				pick[got++] = i;
		while (pick && got-- > 0)
			cJSON_AddItemToArray(out, item(&h->e[pick[got]], a->output));
		free(pick);
	}
	return out;
}

/* history_reply content for a request's body: {"status": "ok", "history": [...]}, or an error
 * naming the argument that was wrong (and an empty history, for clients that read it). */
cJSON *ps_khistory_reply(const struct ps_khistory *h, const cJSON *body)
{
	cJSON *c = cJSON_CreateObject();
	struct args a;
	char err[160];

	if (parse_args(body, &a, err, sizeof(err)) < 0) {
		cJSON *tb = cJSON_CreateArray();
		char line[200];

		snprintf(line, sizeof(line), "ValueError: %s", err);
		cJSON_AddItemToArray(tb, cJSON_CreateString(line));
		cJSON_AddStringToObject(c, "status", "error");
		cJSON_AddStringToObject(c, "ename", "ValueError");
		cJSON_AddStringToObject(c, "evalue", err);
		cJSON_AddItemToObject(c, "traceback", tb);
		cJSON_AddItemToObject(c, "history", cJSON_CreateArray());
		return c;
	}
	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddItemToObject(c, "history", select_entries(h, &a));
	return c;
}
