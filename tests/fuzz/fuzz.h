/* Shared by the libFuzzer targets in tests/fuzz/: checks that abort (libFuzzer reports an
 * abort as a crash and keeps the input) and the one entry point every target defines. */
#ifndef PS_FUZZ_H
#define PS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the code under test broke: say which, and crash so the input is kept. */
#define FUZZ_CHECK(cond, ...)                                                              \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__,       \
				__LINE__, #cond);                                          \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* The input as a C string (malloc'd copy; the parsers under test take NUL-terminated text,
 * so it ends at the input's first NUL, as it would in the real caller). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_CHECK(s, "out of memory");
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* An error message the caller will print: non-empty, NUL-terminated inside its buffer. */
static inline bool fuzz_msg_ok(const char *err, size_t len)
{
	return err[0] && memchr(err, '\0', len);
}

/* Well-formed UTF-8 (Unicode Table 3-7), written apart from the code under test so that the
 * two can disagree. */
static inline bool fuzz_utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], lo = 0x80, hi = 0xbf;
		size_t more;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			more = 1;
		else if (c >= 0xe0 && c <= 0xef)
			more = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		else if (c >= 0xf0 && c <= 0xf4)
			more = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		else
			return false;
		if (i + more >= n)
			return false;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= more; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return false;
		i += more + 1;
	}
	return true;
}

static inline int fuzz_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* JSON text q with every \udcXX escape replaced by the raw byte XX (surrogateescape undone,
 * so that cJSON, which refuses a lone low surrogate, can decode it); other escapes are copied
 * whole, so a "\\udc80" (an escaped backslash, then text) is left alone. Each escape must name
 * a byte 80..FF: surrogateescape has no other. */
static inline char *fuzz_unescape_surrogates(const char *q, size_t qlen, size_t *outlen)
{
	char *out = malloc(qlen + 1);
	size_t o = 0;

	FUZZ_CHECK(out, "out of memory");
	for (size_t i = 0; i < qlen;) {
		if (q[i] != '\\') {
			out[o++] = q[i++];
			continue;
		}
		FUZZ_CHECK(i + 1 < qlen, "a backslash ends the literal: %s", q);
		if (q[i + 1] == 'u' && i + 5 < qlen && (q[i + 2] == 'd' || q[i + 2] == 'D') &&
		    (q[i + 3] == 'c' || q[i + 3] == 'C')) {
			int hi = fuzz_hexval(q[i + 4]), lo = fuzz_hexval(q[i + 5]);

			FUZZ_CHECK(hi >= 0 && lo >= 0, "bad \\udc escape in %s", q);
			FUZZ_CHECK(hi >= 8, "\\udc%c%c is no surrogateescape byte (80..ff)", q[i + 4],
				   q[i + 5]);
			out[o++] = (char)(hi << 4 | lo);
			i += 6;
			continue;
		}
		out[o++] = q[i++];
		out[o++] = q[i++];
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

#endif
