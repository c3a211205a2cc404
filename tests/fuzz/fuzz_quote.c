/* The verdict's text escaping (host/run/result.c, ps_json_quote_bytes): any bytes in must give
 * a JSON string literal (UTF-8, no raw control characters) whose decoding, with each \udcXX
 * read back as the byte XX (Python's surrogateescape), is exactly the bytes that went in.
 *
 * The decoding is cJSON's. cJSON refuses a lone low surrogate such as \udc80 and ends its C
 * string at \u0000, so the check goes in two steps that together cover every input: the
 * quoted text of the whole input must be the quoted NUL-free pieces joined by \u0000, and
 * each piece must decode back through cJSON once its \udcXX escapes are turned back into
 * the bytes they stand for (each escape must name a byte 80..FF: surrogateescape has no
 * other). */
#include <cjson/cJSON.h>

#include "fuzz.h"
#include "run/result.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* The literal itself: quoted, UTF-8, no byte below 0x20 (JSON forbids them raw). */
static void check_literal(const char *q, size_t qlen)
{
	FUZZ_CHECK(qlen >= 2 && q[0] == '"' && q[qlen - 1] == '"', "not a quoted literal: %s", q);
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)q, qlen), "not UTF-8: %s", q);
	for (size_t i = 0; i < qlen; i++)
		FUZZ_CHECK((unsigned char)q[i] >= 0x20, "raw control byte 0x%02x at %zu",
			   (unsigned char)q[i], i);
}

/* One NUL-free piece: quote, check, decode, compare. Returns the literal (malloc'd). */
static char *check_piece(const uint8_t *data, size_t size)
{
	char *q = ps_json_quote_bytes((const char *)data, size), *raw;
	size_t qlen, rawlen;
	cJSON *v;

	FUZZ_CHECK(q, "ps_json_quote_bytes returned NULL for %zu bytes", size);
	qlen = strlen(q);
	check_literal(q, qlen);
	raw = fuzz_unescape_surrogates(q, qlen, &rawlen);
	v = cJSON_ParseWithLength(raw, rawlen);
	FUZZ_CHECK(cJSON_IsString(v), "cJSON cannot parse the literal %s", q);
	FUZZ_CHECK(strlen(v->valuestring) == size && !memcmp(v->valuestring, data, size),
		   "the literal %s decodes to %zu bytes, not the %zu that went in", q,
		   strlen(v->valuestring), size);
	cJSON_Delete(v);
	free(raw);
	return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *whole = ps_json_quote_bytes((const char *)data, size), *joined;
	size_t wlen, j = 0, start = 0;

	FUZZ_CHECK(whole, "ps_json_quote_bytes returned NULL for %zu bytes", size);
	wlen = strlen(whole);
	check_literal(whole, wlen);
	joined = malloc(size * 6 + 3);	/* the pieces' worst case, as for the whole */
	FUZZ_CHECK(joined, "out of memory");
	joined[j++] = '"';
	for (size_t i = 0; i <= size; i++) {
		char *piece;
		size_t plen;

		if (i < size && data[i] != 0)
			continue;
		piece = check_piece(data + start, i - start);
		plen = strlen(piece) - 2;
		memcpy(joined + j, piece + 1, plen);
		j += plen;
		free(piece);
		if (i < size) {
			memcpy(joined + j, "\\u0000", 6);
			j += 6;
		}
		start = i + 1;
	}
	joined[j++] = '"';
	joined[j] = '\0';
	FUZZ_CHECK(j == wlen && !memcmp(joined, whole, wlen),
		   "quoting the whole (%s) differs from quoting its NUL-free pieces (%s)", whole,
		   joined);
	free(joined);
	free(whole);
	return 0;
}
