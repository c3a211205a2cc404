/* The Jupyter kernel's wire parser (host/kernel/wire.c): any multipart message is either
 * refused with a reason or parsed into identities, a verified signature, a header object with
 * msg_type and msg_id strings and a content object. With a key, a parsed message's signature is
 * the HMAC-SHA256 of its four JSON frames (recomputed here with libcrypto's one-shot HMAC(),
 * apart from the parser's EVP_MAC), and the same frames a second time are refused as a replay.
 *
 * Input: byte 0 picks the mode (bit 0: keyed; bit 1: the target signs the frames itself, so
 * that the fuzzer reaches the JSON behind a valid signature); the rest is frames separated by
 * NUL bytes (JSON frames have none, so the separator costs the fuzzer nothing). */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz.h"
#include "kernel/wire.h"

static const char key[] = "a0c1e5d2-fuzz-key";
static struct ps_kreplay replay;
static struct ps_ksigner keyed, unkeyed;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[160];

	FUZZ_CHECK(ps_kreplay_init(&replay) == 0, "replay table");
	FUZZ_CHECK(ps_ksigner_init(&keyed, key, sizeof(key) - 1, &replay, err, sizeof(err)) == 0,
		   "%s", err);
	FUZZ_CHECK(ps_ksigner_init(&unkeyed, "", 0, NULL, err, sizeof(err)) == 0, "%s", err);
	return 0;
}

static void hmac_hex(const struct ps_kframe parts[4], char hex[65])
{
	unsigned char buf[PS_KWIRE_DIGEST];
	unsigned int n = 0;
	size_t total = 0, o = 0;
	unsigned char *all;

	for (int i = 0; i < 4; i++)
		total += parts[i].n;
	all = malloc(total + 1);
	FUZZ_CHECK(all, "out of memory");
	for (int i = 0; i < 4; i++) {
		memcpy(all + o, parts[i].p, parts[i].n);
		o += parts[i].n;
	}
	FUZZ_CHECK(HMAC(EVP_sha256(), key, sizeof(key) - 1, all, total, buf, &n) && n == 32,
		   "HMAC()");
	free(all);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", buf[i]);
}

static size_t split(const uint8_t *data, size_t size, struct ps_kframe *f, size_t max)
{
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= size && n < max; i++)
		if (i == size || data[i] == 0) {
			f[n++] = (struct ps_kframe){ data + start, i - start };
			start = i + 1;
		}
	return n;
}

/* Put a valid signature in front of the four frames after the delimiter, when there is one. */
static void sign_in_place(struct ps_kframe *f, size_t n, char hex[65])
{
	for (size_t i = 0; i + 5 < n; i++)
		if (f[i].n == 9 && !memcmp(f[i].p, PS_KWIRE_DELIM, 9)) {
			hmac_hex(&f[i + 2], hex);
			f[i + 1] = (struct ps_kframe){ (const unsigned char *)hex, 64 };
			return;
		}
}

static void check_parsed(const struct ps_kmsg *m, bool is_keyed)
{
	char hex[65];
	const struct ps_kframe parts[4] = { m->header, m->parent, m->metadata, m->content };

	FUZZ_CHECK(m->msg_type && *m->msg_type && m->msg_id && *m->msg_id, "no msg_type/id");
	FUZZ_CHECK(cJSON_IsObject(m->hdr) && cJSON_IsObject(m->body), "header/content objects");
	FUZZ_CHECK(m->nids <= PS_KWIRE_MAX_IDS, "%zu identities", m->nids);
	if (is_keyed) {
		hmac_hex(parts, hex);
		FUZZ_CHECK(m->sig.n == 64 && !memcmp(m->sig.p, hex, 64),
			   "accepted a signature that is not the HMAC of the four frames");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_kframe f[PS_KWIRE_MAX_FRAMES + 8];
	struct ps_kmsg m, again;
	char err[160], hex[65];
	bool is_keyed, self_sign;
	size_t n;
	int rc;

	if (size < 1)
		return 0;
	is_keyed = data[0] & 1;
	self_sign = data[0] & 2;
	n = split(data + 1, size - 1, f, sizeof(f) / sizeof(f[0]));
	if (self_sign)
		sign_in_place(f, n, hex);
	err[0] = '\0';
	rc = ps_kmsg_parse(&m, f, n, is_keyed ? &keyed : &unkeyed, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
	if (rc < 0) {
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)), "a refusal without a reason");
		return 0;
	}
	check_parsed(&m, is_keyed);
	ps_kmsg_free(&m);
	if (is_keyed) {
		rc = ps_kmsg_parse(&again, f, n, &keyed, err, sizeof(err));
		FUZZ_CHECK(rc == -1 && strstr(err, "replayed"), "a replay was accepted (%s)", err);
	}
	return 0;
}
