/* IPython's help syntax in a cell: `name?`, `name??` or `?name` (name dotted, ASCII) is not
 * Python, so it is not run; the name is inspected on the live state (the inspect query, in a
 * disposable fork of the holder, as inspect_request) and the answer goes back as ipykernel's
 * "page" payload in the execute_reply. The front only matches the cell's text against that
 * one shape; it never parses Python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_int.h"
#include "session/session.h"

static bool is_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(char c)
{
	return is_start(c) || (c >= '0' && c <= '9');
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A dotted name exactly: a.b.c */
static bool dotted(const char *p, size_t n)
{
	bool start = true;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (start && !is_start(p[i]))
			return false;
		if (p[i] == '.') {
			start = true;
		} else if (!is_name_char(p[i])) {
			return false;
		} else {
			start = false;
		}
	}
	return !start;
}

bool ps_kpage_name(const char *code, char *name, size_t len)
{
	const char *b = code, *e = code + strlen(code);
	size_t lead = 0, trail = 0;

	while (b < e && is_space(*b))
		b++;
	while (e > b && is_space(e[-1]))
		e--;
	while (b < e && *b == '?' && lead < 2)
		b++, lead++;
	while (e > b && e[-1] == '?' && trail < 2)
		e--, trail++;
	while (b < e && is_space(*b))	/* "? name", "name ?" */
		b++;
	while (e > b && is_space(e[-1]))
		e--;
	if ((!lead && !trail) || (lead && trail) || !dotted(b, (size_t)(e - b)) ||
	    (size_t)(e - b) >= len)
		return false;
	memcpy(name, b, (size_t)(e - b));
	name[e - b] = '\0';
	return true;
}

cJSON *ps_kpage(struct ps_kernel *k, const char *name, char *err, size_t errlen)
{
	const char *why;
	struct ps_session *s = ps_kernel_session(k, &why);
	char *text = s ? ps_session_query(s, "inspect", name, strlen(name), strlen(name), err,
					  errlen) : NULL;
	cJSON *j = text ? cJSON_Parse(text) : NULL, *payload = NULL, *page;
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");

	if (!s)
		snprintf(err, errlen, "%s", why);
	else if (text && !j)
		snprintf(err, errlen, "the inspection's answer is not JSON");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "found")) && cJSON_IsObject(data)) {
		payload = cJSON_CreateArray();
		page = cJSON_CreateObject();
		cJSON_AddStringToObject(page, "source", "page");
		cJSON_AddItemToObject(page, "data", cJSON_Duplicate(data, 1));
		cJSON_AddNumberToObject(page, "start", 0);
		cJSON_AddItemToArray(payload, page);
	} else if (j) {
		snprintf(err, errlen, "Object `%.200s` not found.", name);
	}
	cJSON_Delete(j);
	free(text);
	return payload;
}
