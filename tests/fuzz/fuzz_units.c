/* Human units (host/util/units.c): any text either parses or fails with a message, and what
 * parses formats back to text that parses to the same value. A plain decimal integer must
 * agree with strtoull (an oracle written apart from the parser). */
#include <errno.h>
#include <inttypes.h>

#include "fuzz.h"
#include "util/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static void check_size(const char *s)
{
	char err[256], text[32];
	uint64_t v = 0, back = 0;

	memset(err, 0, sizeof(err));
	if (ps_parse_size(s, &v, err, sizeof(err)) < 0) {
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)), "size '%s' failed without a message", s);
		return;
	}
	ps_format_size(v, text, sizeof(text));
	FUZZ_CHECK(ps_parse_size(text, &back, err, sizeof(err)) == 0,
		   "size '%s' = %" PRIu64 " formats as '%s', which does not parse: %s", s, v,
		   text, err);
	FUZZ_CHECK(back == v, "size '%s' = %" PRIu64 " -> '%s' -> %" PRIu64, s, v, text, back);
	if (all_digits(s)) {
		unsigned long long want;

		errno = 0;
		want = strtoull(s, NULL, 10);
		FUZZ_CHECK(errno == 0 && want == v, "size '%s' = %" PRIu64 ", strtoull says %llu",
			   s, v, want);
	}
}

static void check_duration(const char *s)
{
	char err[256], text[32];
	uint64_t ms = 0, back = 0;

	memset(err, 0, sizeof(err));
	if (ps_parse_duration_ms(s, &ms, err, sizeof(err)) < 0) {
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)), "duration '%s' failed without a message",
			   s);
		return;
	}
	ps_format_duration_ms(ms, text, sizeof(text));
	FUZZ_CHECK(ps_parse_duration_ms(text, &back, err, sizeof(err)) == 0,
		   "duration '%s' = %" PRIu64 " ms formats as '%s', which does not parse: %s", s,
		   ms, text, err);
	FUZZ_CHECK(back == ms, "duration '%s' = %" PRIu64 " ms -> '%s' -> %" PRIu64, s, ms, text,
		   back);
	/* A bare integer is seconds. */
	if (all_digits(s)) {
		unsigned long long sec;

		errno = 0;
		sec = strtoull(s, NULL, 10);
		FUZZ_CHECK(errno == 0 && sec <= UINT64_MAX / 1000000 && ms == sec * 1000,
			   "duration '%s' = %" PRIu64 " ms, strtoull says %llu s", s, ms, sec);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);

	check_size(s);
	check_duration(s);
	free(s);
	return 0;
}
