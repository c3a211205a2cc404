/* Checks of JSON text and objects beyond cJSON's (jsoncheck.h). */
#include "jsoncheck.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Length of the well-formed UTF-8 sequence at s (at most avail bytes), or 0: Unicode Table
 * 3-7, whose second-byte ranges rule out overlongs, surrogates and what is past U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n > avail || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

const char *ps_json_text_problem(const char *b, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)b[i];
		size_t n = utf8_len((const unsigned char *)b + i, len - i);

		if (!c)
			return "a NUL byte (not valid in JSON)";
		if (!n)
			return "not valid UTF-8";
		if (c == '\\' && i + 6 <= len && !strncasecmp(b + i + 1, "u0000", 5)) {
			size_t bs = 0;

			while (bs <= i && b[i - bs] == '\\')
				bs++;
			if (bs % 2)
				return "\\u0000 (NUL) in a string is not supported";
		}
		i += n;
	}
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, not pairwise: a line may hold a hundred thousand keys. */
const char *ps_json_duplicate_key(const cJSON *obj)
{
	static const char oom[] = "(out of memory)";
	const char **names, *dup = NULL;
	size_t n = 0, i = 0;

	if (!cJSON_IsObject(obj))
		return NULL;
	for (const cJSON *a = obj->child; a; a = a->next)
		n++;
	if (n < 2)
		return NULL;
	names = malloc(n * sizeof(*names));
	if (!names)
		return oom;	/* refused, not let through unchecked */
	for (const cJSON *a = obj->child; a; a = a->next)
		names[i++] = a->string ? a->string : "";
	qsort(names, n, sizeof(*names), by_name);
	for (i = 1; i < n && !dup; i++)
		if (!strcmp(names[i - 1], names[i]))
			dup = names[i];
	free(names);
	return dup;
}

int ps_utf8_clip(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (n == max)
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	return (int)n;
}

void ps_utf8_trim_cut(char *buf)
{
	size_t len = strlen(buf), k = len, need;
	unsigned char lead;

	while (k > 0 && len - k < 3 && ((unsigned char)buf[k - 1] & 0xc0) == 0x80)
		k--;
	if (k == 0 || (lead = (unsigned char)buf[k - 1]) < 0xc0)
		return;
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (len - (k - 1) < need)
		buf[k - 1] = '\0';
}
