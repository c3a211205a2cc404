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

#endif
