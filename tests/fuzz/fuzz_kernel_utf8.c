/* The kernel's stream text (host/kernel/utf8.c): a cell's output cut into chunks anywhere
 * becomes JSON-safe text. Whatever the bytes, every piece is well-formed UTF-8 without NUL
 * (checked by fuzz.h's own validator); when the bytes were valid UTF-8 without NUL, the
 * pieces joined are exactly those bytes, however the chunks cut the characters.
 * Input: byte 0 seeds the chunk lengths, the rest is the output. */
#include "fuzz.h"
#include "kernel/kernel_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_kutf8 u = { 0 };
	size_t i = 1, o = 0;
	unsigned seed = size ? data[0] : 0;
	char *joined = malloc(3 * size + 1);
	bool valid;

	FUZZ_CHECK(joined, "out of memory");
	valid = size < 1 || (fuzz_utf8_valid(data + 1, size - 1) && !memchr(data + 1, 0, size - 1));
	while (i <= size) {
		size_t len = size - i < (seed % 7) + 1 ? size - i : (seed % 7) + 1;
		bool final = i + len >= size;
		char *piece = ps_kutf8_take(&u, (const char *)data + i, len, final);

		FUZZ_CHECK(piece, "out of memory");
		FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)piece, strlen(piece)),
			   "not UTF-8 out");
		memcpy(joined + o, piece, strlen(piece));
		o += strlen(piece);
		free(piece);
		seed = seed * 1103515245u + 12345u;
		i += len;
		if (final)
			break;
	}
	FUZZ_CHECK(u.carry_len == 0, "%zu bytes left after the final piece", u.carry_len);
	if (valid)
		FUZZ_CHECK(o == size - (size ? 1 : 0) && !memcmp(joined, data + 1, o),
			   "valid UTF-8 changed on its way through");
	free(joined);
	return 0;
}
