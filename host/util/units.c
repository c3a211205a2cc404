/* Human units for limits: sizes ("64K", "256M", "2GiB") and durations ("500ms", "1.5s").
 * Parsed with integer arithmetic only, so "0.1s" is exactly 100 ms on every host, and
 * every overflow is an error rather than a silently wrapped limit. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

struct unit {
	const char *suffix;
	uint64_t mult;		/* bytes, or microseconds for durations */
};

/* Powers of 1024. A unit letter may be followed by "B" or "iB"; a bare "B" is bytes. */
static const struct unit size_units[] = {
	{ "", 1 },	  { "B", 1 },
	{ "K", 1ULL << 10 }, { "KB", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "k", 1ULL << 10 },
	{ "M", 1ULL << 20 }, { "MB", 1ULL << 20 }, { "MiB", 1ULL << 20 },
	{ "G", 1ULL << 30 }, { "GB", 1ULL << 30 }, { "GiB", 1ULL << 30 },
	{ "T", 1ULL << 40 }, { "TB", 1ULL << 40 }, { "TiB", 1ULL << 40 },
};

/* Microseconds, so "100us" is representable before rounding up to milliseconds.
 * A bare number is seconds. */
static const struct unit duration_units[] = {
	{ "", 1000000ULL },   { "us", 1ULL },	     { "ms", 1000ULL },
	{ "s", 1000000ULL },  { "m", 60000000ULL }, { "min", 60000000ULL },
	{ "h", 3600000000ULL },
};

#define MAX_FRACTION_DIGITS 9

/* A decimal number "123" or "1.25": the integer part, the fraction's digits as an integer,
 * and 10^(number of fraction digits). Returns a pointer just past the number, or NULL. */
static const char *parse_decimal(const char *s, uint64_t *ip, uint64_t *frac, uint64_t *scale,
				 char *err, size_t errlen)
{
	const char *p = s;
	uint64_t v = 0;

	*frac = 0;
	*scale = 1;
	if (*p == '-') {
		snprintf(err, errlen, "'%s' is negative", s);
		return NULL;
	}
	if (*p < '0' || *p > '9') {
		snprintf(err, errlen, "'%s' is not a number", s);
		return NULL;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v)) {
			snprintf(err, errlen, "'%s' is too large", s);
			return NULL;
		}
	}
	*ip = v;
	if (*p != '.')
		return p;
	p++;
	if (*p < '0' || *p > '9') {
		snprintf(err, errlen, "'%s' is not a number (digits must follow '.')", s);
		return NULL;
	}
	for (int n = 0; *p >= '0' && *p <= '9'; p++, n++) {
		if (n == MAX_FRACTION_DIGITS) {
			snprintf(err, errlen, "'%s' has more than %d decimal places", s,
				 MAX_FRACTION_DIGITS);
			return NULL;
		}
		*frac = *frac * 10 + (uint64_t)(*p - '0');
		*scale *= 10;
	}
	return p;
}

static const struct unit *find_unit(const struct unit *t, size_t n, const char *suffix)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].suffix, suffix) == 0)
			return &t[i];
	return NULL;
}

/* value * mult, exactly, as a 128-bit count of the unit's base (bytes or microseconds).
 * *rem is the fractional remainder (non-zero when the result is not whole). */
static int scale_value(const char *s, uint64_t ip, uint64_t frac, uint64_t scale, uint64_t mult,
		       unsigned __int128 *out, uint64_t *rem, char *err, size_t errlen)
{
	unsigned __int128 whole = (unsigned __int128)ip * mult;
	unsigned __int128 f = (unsigned __int128)frac * mult;

	whole += f / scale;
	*rem = (uint64_t)(f % scale);
	if (whole > UINT64_MAX) {
		snprintf(err, errlen, "'%s' is too large", s);
		return -1;
	}
	*out = whole;
	return 0;
}

static int parse_with(const char *s, const struct unit *t, size_t n, const char *kind,
		      const char *known, unsigned __int128 *out, uint64_t *rem, char *err,
		      size_t errlen)
{
	uint64_t ip, frac, scale;
	const struct unit *u;
	const char *p;

	if (!s || !*s) {
		snprintf(err, errlen, "empty %s", kind);
		return -1;
	}
	p = parse_decimal(s, &ip, &frac, &scale, err, errlen);
	if (!p)
		return -1;
	u = find_unit(t, n, p);
	if (!u) {
		if (strchr(s, ' ') || strchr(s, '\t'))
			snprintf(err, errlen, "bad %s '%s' (no spaces; e.g. %s)", kind, s, known);
		else
			snprintf(err, errlen, "bad unit '%s' in '%s' (e.g. %s)", p, s, known);
		return -1;
	}
	return scale_value(s, ip, frac, scale, u->mult, out, rem, err, errlen);
}

int ps_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	unsigned __int128 v;
	uint64_t rem;

	if (parse_with(s, size_units, PS_ARRAY_LEN(size_units), "size", "64K, 256M, 2G", &v,
		       &rem, err, errlen) < 0)
		return -1;
	if (rem) {
		snprintf(err, errlen, "'%s' is not a whole number of bytes", s);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int ps_parse_duration_ms(const char *s, uint64_t *out, char *err, size_t errlen)
{
	unsigned __int128 us;
	uint64_t rem;

	if (parse_with(s, duration_units, PS_ARRAY_LEN(duration_units), "duration",
		       "500ms, 2s, 1.5s, 1m", &us, &rem, err, errlen) < 0)
		return -1;
	/* Round up: a limit of "100us" must not become a limit of zero. */
	if (rem)
		us++;
	us = (us + 999) / 1000;
	/* The result must parse back from "<ms>ms" too (ps_format_duration_ms): a count of
	 * microseconds just under 2^64 rounds up to one that is not. */
	if (us > UINT64_MAX / 1000) {
		snprintf(err, errlen, "'%s' is too large", s);
		return -1;
	}
	*out = (uint64_t)us;
	return 0;
}

/* The largest unit that divides exactly, so the output parses back to the same value. */
void ps_format_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "TGMK";

	for (int i = 0; v && units[i]; i++) {
		unsigned shift = 10 * (unsigned)(4 - i);

		if ((v & ((1ULL << shift) - 1)) == 0) {
			snprintf(buf, len, "%" PRIu64 "%c", v >> shift, units[i]);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64, v);
}

void ps_format_duration_ms(uint64_t ms, char *buf, size_t len)
{
	static const struct {
		uint64_t ms;
		const char *suffix;
	} units[] = { { 3600000, "h" }, { 60000, "m" }, { 1000, "s" } };

	for (size_t i = 0; ms && i < PS_ARRAY_LEN(units); i++) {
		if (ms % units[i].ms == 0) {
			snprintf(buf, len, "%" PRIu64 "%s", ms / units[i].ms, units[i].suffix);
			return;
		}
	}
	snprintf(buf, len, ms ? "%" PRIu64 "ms" : "%" PRIu64 "s", ms);
}
