/* Files out of a run: the host's own checks of what a (possibly forged) report names, the
 * caps, and the codecs the verdict's digests and contents rest on. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "run/outfiles.h"
#include "util/codec.h"
#include "harness.h"

static void test_names(void)
{
	static const struct {
		const char *path, *why;
	} cases[] = {
		{ "a.png", NULL },
		{ "d/e/f.txt", NULL },
		{ ".hidden", NULL },
		{ "..x", NULL },
		{ "", "an empty name" },
		{ "/etc/passwd", "an absolute name" },
		{ "..", "a '.' or '..' component" },
		{ "../../etc/x", "a '.' or '..' component" },
		{ "a/../../b", "a '.' or '..' component" },
		{ "a/./b", "a '.' or '..' component" },
		{ "a//b", "an empty component" },
		{ "a/", "an empty component" },	/* a directory's name, no file's */
		{ "1/2/3/4/5/6/7/8/9/10", "deeper than 8 directories" },
		{ "1/2/3/4/5/6/7/8/f", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = ps_outfile_name_problem(cases[i].path);

		if (cases[i].why)
			CHECK_STR(why, cases[i].why);
		else
			CHECK(why == NULL);
	}
	char longc[300];
	memset(longc, 'x', 299);
	longc[299] = '\0';
	CHECK_STR(ps_outfile_name_problem(longc), "a component longer than 255 bytes");
}

static void test_codecs(void)
{
	char h[65], b[64];
	unsigned char d[64];

	ps_sha256_hex("abc", 3, h);
	CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ps_sha256_hex("", 0, h);
	CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* 56 bytes: the padding spills into a second block */
	ps_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
	CHECK_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	ps_base64_encode("hello!?", 7, b);
	CHECK_STR(b, "aGVsbG8hPw==");
	CHECK(ps_base64_decode(b, strlen(b), d) == 7 && !memcmp(d, "hello!?", 7));
	CHECK(ps_base64_decode("aGk=", 4, d) == 2);
	CHECK(ps_base64_decode("", 0, d) == 0);
	CHECK(ps_base64_decode("aGk", 3, d) == -1);	/* not a multiple of 4 */
	CHECK(ps_base64_decode("a=Gk", 4, d) == -1);	/* padding inside */
	CHECK(ps_base64_decode("aG k", 4, d) == -1);	/* whitespace */
	CHECK(ps_base64_decode("aGk=aGk=", 8, d) == -1);	/* padding before the end */
	/* what lenient decoders take (libcrypto's): whitespace at either end, '=' as a digit */
	CHECK(ps_base64_decode("    aGk=", 8, d) == -1);
	CHECK(ps_base64_decode("aGk=    ", 8, d) == -1);
	CHECK(ps_base64_decode("a===", 4, d) == -1);
	CHECK(ps_base64_decode("====", 4, d) == -1);
	CHECK(ps_base64_decode("aGk\n", 4, d) == -1);
	/* a 5 MiB file's round trip, and one space deep inside it */
	size_t big = (5u << 20) + 1;
	unsigned char *src = malloc(big), *dst = malloc(big);
	char *text = malloc(ps_base64_encoded_len(big) + 1);
	CHECK(src && dst && text);
	if (src && dst && text) {
		for (size_t i = 0; i < big; i++)
			src[i] = (unsigned char)(i * 131 + (i >> 11));
		ps_base64_encode(src, big, text);
		CHECK(strlen(text) == ps_base64_encoded_len(big));
		CHECK(ps_base64_decode(text, strlen(text), dst) == (long)big && !memcmp(src, dst, big));
		text[(4u << 20) - 1] = ' ';
		CHECK(ps_base64_decode(text, strlen(text), dst) == -1);
	}
	free(src);
	free(dst);
	free(text);
	/* the decoder's table: every byte value through a round trip, every alphabet letter */
	unsigned char all[256], back[256];
	char enc[400];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	ps_base64_encode(all, sizeof(all), enc);
	CHECK(ps_base64_decode(enc, strlen(enc), back) == 256 && !memcmp(all, back, 256));
	const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	CHECK(ps_base64_decode(abc, 64, back) == 48);
	ps_base64_encode(back, 48, enc);
	CHECK_STR(enc, abc);
	/* and no byte outside it: NUL, '-', '_', '.', a high byte, each in a valid quartet */
	static const char bad[] = { '\0', '-', '_', '.', ' ', '\n', (char)0x80, (char)0xff };
	for (size_t i = 0; i < sizeof(bad); i++) {
		char q[4] = { 'Q', 'U', bad[i], 'E' };
		CHECK(ps_base64_decode(q, 4, back) == -1);
	}
}

static cJSON *file(const char *path, const char *data)
{
	cJSON *f = cJSON_CreateObject();

	cJSON_AddStringToObject(f, "path", path);
	cJSON_AddStringToObject(f, "data", data);
	return f;
}

static void test_take(void)
{
	cJSON *rep = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(rep, "files");
	struct ps_limits l = { .output_files = 3, .output_files_bytes = 8 };
	struct ps_outfiles o;

	cJSON_AddItemToArray(files, file("a", "aGk="));		/* "hi" */
	cJSON_AddItemToArray(files, file("../x", "aGk="));
	cJSON_AddItemToArray(files, file("a", "aGk="));		/* twice */
	cJSON_AddItemToArray(files, file("b", "!!!!"));
	cJSON_AddItemToArray(files, file("c", "aGVsbG8h"));	/* 6 bytes: 8 in all */
	cJSON_AddItemToArray(files, file("d", "aGk="));		/* over 8 bytes */
	CHECK(ps_outfiles_take(rep, &l, &o) == 0);
	CHECK(o.n == 2 && o.bytes == 8);
	CHECK_STR(o.files[0].path, "a");
	CHECK(o.files[0].len == 2 && !memcmp(o.files[0].data, "hi", 2));
	CHECK_STR(o.files[0].sha256,
		  "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4");
	CHECK_STR(o.files[1].path, "c");
	CHECK(o.n_refused == 4);
	CHECK_STR(o.refused[0].path, "../x");
	CHECK_STR(o.refused[1].reason, "a second file of that name");
	CHECK_STR(o.refused[2].reason, "content is not base64");
	CHECK_STR(o.refused[3].reason, "over the limit on output bytes");
	ps_outfiles_free(&o);

	l.output_files = 1;
	l.output_files_bytes = 100;
	CHECK(ps_outfiles_take(rep, &l, &o) == 0);
	CHECK(o.n == 1 && o.n_refused == 5);
	CHECK_STR(o.refused[3].reason, "over the limit on output files");
	ps_outfiles_free(&o);
	cJSON_Delete(rep);
}

int main(void)
{
	test_names();
	test_codecs();
	test_take();
	return ps_test_done("test_outfiles");
}
