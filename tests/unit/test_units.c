/* Human units: every accepted form gives the exact value, every bad one a reason, and
 * formatting parses back to the same number. */
#include <stdint.h>

#include "harness.h"
#include "policy/policy.h"
#include "util/util.h"

struct ok_case {
	const char *in;
	uint64_t want;
};

struct bad_case {
	const char *in;
	const char *reason;	/* a substring of the error */
};

static const struct ok_case sizes_ok[] = {
	{ "0", 0 },
	{ "1", 1 },
	{ "123", 123 },
	{ "123B", 123 },
	{ "64K", 64 << 10 },
	{ "64k", 64 << 10 },
	{ "64KB", 64 << 10 },
	{ "64KiB", 64 << 10 },
	{ "256M", 256ULL << 20 },
	{ "256MiB", 256ULL << 20 },
	{ "2G", 2ULL << 30 },
	{ "1T", 1ULL << 40 },
	{ "1.5K", 1536 },
	{ "0.5M", 512 << 10 },
	{ "18446744073709551615", UINT64_MAX },
	{ "007", 7 },
};

static const struct bad_case sizes_bad[] = {
	{ "", "empty" },
	{ "-1", "negative" },
	{ "-1K", "negative" },
	{ "K", "not a number" },
	{ "abc", "not a number" },
	{ "5x", "bad unit 'x'" },
	{ "5Kb", "bad unit 'Kb'" },
	{ "5 K", "no spaces" },
	{ " 5K", "not a number" },
	{ "5K ", "no spaces" },
	{ "1.", "digits must follow" },
	{ ".5K", "not a number" },
	{ "1.5", "whole number of bytes" },
	{ "0.0001K", "whole number of bytes" },
	{ "18446744073709551616", "too large" },
	{ "99999999999999999999999", "too large" },
	{ "16777216T", "too large" },
	{ "1.0000000001K", "decimal places" },
	{ "1e6", "bad unit 'e6'" },
	{ "0x10", "bad unit 'x10'" },
	{ "+5", "not a number" },
};

static const struct ok_case durations_ok[] = {
	{ "0", 0 },
	{ "2", 2000 },
	{ "2s", 2000 },
	{ "1.5s", 1500 },
	{ "0.001s", 1 },
	{ "500ms", 500 },
	{ "1m", 60000 },
	{ "1min", 60000 },
	{ "1.5m", 90000 },
	{ "2h", 7200000 },
	{ "100us", 1 },		/* rounded up, never to zero */
	{ "1001us", 2 },
	{ "1000us", 1 },
	{ "0.0001s", 1 },
	{ "0ms", 0 },
	{ "18446744073709551ms", 18446744073709551ULL },
};

static const struct bad_case durations_bad[] = {
	{ "", "empty" },
	{ "-1", "negative" },
	{ "-0.5s", "negative" },
	{ "s", "not a number" },
	{ "5x", "bad unit 'x'" },
	{ "5S", "bad unit 'S'" },
	{ "10 s", "no spaces" },
	{ "1.5.2s", "bad unit '.2s'" },
	{ "1e3ms", "bad unit 'e3ms'" },
	{ "5sec", "bad unit 'sec'" },
	{ "18446744073709551616ms", "too large" },
	/* rounds up to 18446744073709552 ms, whose "...ms" would not parse back (fuzz_units) */
	{ "18446744073709551615us", "too large" },
	{ "18446744073709552s", "too large" },
	{ "99999999999999999999h", "too large" },
	{ "5124095576030432h", "too large" },
	{ "1.1234567891s", "decimal places" },
};

static void test_sizes(void)
{
	char err[256];
	uint64_t v;

	for (size_t i = 0; i < PS_ARRAY_LEN(sizes_ok); i++) {
		err[0] = '\0';
		v = 12345;
		CHECK(ps_parse_size(sizes_ok[i].in, &v, err, sizeof(err)) == 0);
		if (v != sizes_ok[i].want)
			fprintf(stderr, "size '%s': got %llu want %llu (%s)\n", sizes_ok[i].in,
				(unsigned long long)v, (unsigned long long)sizes_ok[i].want, err);
		CHECK(v == sizes_ok[i].want);
	}
	for (size_t i = 0; i < PS_ARRAY_LEN(sizes_bad); i++) {
		err[0] = '\0';
		v = 777;
		CHECK(ps_parse_size(sizes_bad[i].in, &v, err, sizeof(err)) == -1);
		CHECK_CONTAINS(err, sizes_bad[i].reason);
		CHECK(v == 777);	/* untouched on error */
	}
	/* The largest exact value below 2^64 in a unit. */
	CHECK(ps_parse_size("16777215T", &v, err, sizeof(err)) == 0);
	CHECK(v == 16777215ULL << 40);
	CHECK(ps_parse_size(NULL, &v, err, sizeof(err)) == -1);
}

static void test_durations(void)
{
	char err[256];
	uint64_t v;

	for (size_t i = 0; i < PS_ARRAY_LEN(durations_ok); i++) {
		err[0] = '\0';
		v = 12345;
		CHECK(ps_parse_duration_ms(durations_ok[i].in, &v, err, sizeof(err)) == 0);
		if (v != durations_ok[i].want)
			fprintf(stderr, "duration '%s': got %llu want %llu (%s)\n",
				durations_ok[i].in, (unsigned long long)v,
				(unsigned long long)durations_ok[i].want, err);
		CHECK(v == durations_ok[i].want);
	}
	for (size_t i = 0; i < PS_ARRAY_LEN(durations_bad); i++) {
		err[0] = '\0';
		v = 777;
		CHECK(ps_parse_duration_ms(durations_bad[i].in, &v, err, sizeof(err)) == -1);
		CHECK_CONTAINS(err, durations_bad[i].reason);
		CHECK(v == 777);
	}
	/* The error quotes the input, so a CLI message can be read on its own. */
	CHECK(ps_parse_duration_ms("5x", &v, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "'5x'");
	/* A tiny buffer truncates but never overflows. */
	char tiny[8];
	CHECK(ps_parse_duration_ms("5x", &v, tiny, sizeof(tiny)) == -1);
	CHECK(strlen(tiny) == sizeof(tiny) - 1);
}

static void test_format(void)
{
	static const struct ok_case sizes[] = {
		{ "0", 0 }, { "100", 100 }, { "1K", 1024 }, { "1536K", 1536ULL << 10 }, { "256M", 256ULL << 20 },
		{ "1G", 1ULL << 30 }, { "3T", 3ULL << 40 }, { "1025", 1025 },
	};
	static const struct ok_case durations[] = {
		{ "0s", 0 }, { "1ms", 1 }, { "1500ms", 1500 }, { "5s", 5000 }, { "90s", 90000 },
		{ "2m", 120000 }, { "1h", 3600000 }, { "61m", 3660000 },
	};
	char buf[32], err[128];
	uint64_t back;

	for (size_t i = 0; i < PS_ARRAY_LEN(sizes); i++) {
		ps_format_size(sizes[i].want, buf, sizeof(buf));
		CHECK_STR(buf, sizes[i].in);
		CHECK(ps_parse_size(buf, &back, err, sizeof(err)) == 0 && back == sizes[i].want);
	}
	for (size_t i = 0; i < PS_ARRAY_LEN(durations); i++) {
		ps_format_duration_ms(durations[i].want, buf, sizeof(buf));
		CHECK_STR(buf, durations[i].in);
		CHECK(ps_parse_duration_ms(buf, &back, err, sizeof(err)) == 0 &&
		      back == durations[i].want);
	}
	ps_format_size(UINT64_MAX, buf, sizeof(buf));
	CHECK_STR(buf, "18446744073709551615");
}

int main(void)
{
	test_sizes();
	test_durations();
	test_format();
	return ps_test_done("test_units");
}
