/* A cell's output arrives in chunks cut anywhere, and may not be UTF-8 at all; a Jupyter
 * message must be JSON, so valid UTF-8. A multi-byte character cut at a chunk's end waits for
 * the next chunk; an invalid byte (and NUL) becomes U+FFFD, as Python's errors="replace" does. */
#include <stdlib.h>
#include <string.h>

#include "kernel_int.h"

/* The length of the valid UTF-8 sequence at p (n bytes available): 1-4, 0 when p starts an
 * invalid one, -1 when it may be valid but is cut short by the end. */
static int seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	int len;
	unsigned lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4;
	else
		return 0;
	/* the second byte's range excludes overlongs, surrogates and > U+10FFFF */
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xBF))
			return 0;
	}
	return len;
}

char *ps_kutf8_take(struct ps_kutf8 *u, const char *data, size_t len, bool final)
{
	size_t n = u->carry_len + len, o = 0, i = 0;
	unsigned char *in = malloc(n ? n : 1), *out = malloc(3 * n + 1);

	if (!in || !out) {
		free(in);
		free(out);
		return NULL;
	}
	memcpy(in, u->carry, u->carry_len);
	memcpy(in + u->carry_len, data, len);
	u->carry_len = 0;
	while (i < n) {
		int l = seq_len(in + i, n - i);

		if (l < 0 && !final && n - i < sizeof(u->carry)) {
			memcpy(u->carry, in + i, n - i);	/* the rest comes next chunk */
			u->carry_len = n - i;
			break;
		}
		if (l <= 0 || in[i] == 0) {	/* NUL too: a cJSON string ends at it */
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, in + i, (size_t)l);
		o += (size_t)l;
		i += (size_t)l;
	}
	out[o] = '\0';
	free(in);
	return (char *)out;
}
