/* The Jupyter wire format (host/kernel/wire.c, replay.c, utf8.c): HMAC-SHA256 against a known
 * vector, a message verified over its four frames as received and refused when any byte of
 * them or of the signature changes, a replay refused, the replay history bounded yet holding
 * the most recent messages, new headers, and stream text made valid UTF-8 across chunk cuts. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "kernel/kernel_int.h"

#define F(s) ((struct ps_kframe){ (const unsigned char *)(s), sizeof(s) - 1 })

static struct ps_kreplay replay;

static void test_hmac_vector(void)
{
	/* RFC 4231-style check: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"),
	 * the message cut into the four parts the wire signs */
	struct ps_ksigner s;
	const struct ps_kframe parts[4] = { F("The quick "), F("brown fox "), F(""),
					    F("jumps over the lazy dog") };
	char err[160], hex[65];

	CHECK(ps_ksigner_init(&s, "key", 3, NULL, err, sizeof(err)) == 0);
	CHECK(ps_ksigner_sign(&s, parts, hex) == 0);
	CHECK_STR(hex, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
	CHECK(ps_ksigner_sign(&s, parts, hex) == 0);	/* the context re-keys itself */
	CHECK_STR(hex, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
	ps_ksigner_free(&s);
}

/* [id, <IDS|MSG>, sig, header, parent, metadata, content, buffer], signed with s. */
static size_t build(struct ps_ksigner *s, struct ps_kframe *f, char *sig, const char *header,
		    const char *content)
{
	f[0] = F("client-id");
	f[1] = F(PS_KWIRE_DELIM);
	f[3] = (struct ps_kframe){ (const unsigned char *)header, strlen(header) };
	f[4] = F("{}");
	f[5] = F("{}");
	f[6] = (struct ps_kframe){ (const unsigned char *)content, strlen(content) };
	f[7] = F("raw buffer");
	ps_ksigner_sign(s, &f[3], sig);
	f[2] = (struct ps_kframe){ (const unsigned char *)sig, strlen(sig) };
	return 8;
}

static const char hdr[] = "{\"msg_id\":\"m1\",\"msg_type\":\"kernel_info_request\"}";

static void test_parse_and_verify(void)
{
	struct ps_ksigner s;
	struct ps_kframe f[8];
	struct ps_kmsg m;
	char err[160], sig[65], bad[65], tampered[] = "{\"code\":\"2\"}";
	size_t n;

	CHECK(ps_ksigner_init(&s, "secret", 6, &replay, err, sizeof(err)) == 0);
	n = build(&s, f, sig, hdr, "{\"code\":\"1\"}");
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == 0);
	CHECK_STR(m.msg_type, "kernel_info_request");
	CHECK_STR(m.msg_id, "m1");
	CHECK(m.nids == 1 && m.ids[0].n == 9 && m.nbuffers == 1);
	ps_kmsg_free(&m);

	/* the same frames again: a replay */
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "replayed");

	/* one byte of the content changed under the old signature */
	n = build(&s, f, sig, hdr, "{\"code\":\"3\"}");
	f[6] = (struct ps_kframe){ (const unsigned char *)tampered, strlen(tampered) };
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "mismatch");

	/* one digit of the signature changed; and the signature in capitals (not Jupyter's) */
	n = build(&s, f, sig, hdr, "{\"code\":\"4\"}");
	memcpy(bad, sig, sizeof(bad));
	bad[10] = bad[10] == '0' ? '1' : '0';
	f[2].p = (const unsigned char *)bad;
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "mismatch");
	f[2].n = 63;
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "64-digit");

	/* the positive control of the above: the untouched message of the same content */
	f[2] = (struct ps_kframe){ (const unsigned char *)sig, 64 };
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == 0);
	ps_kmsg_free(&m);
	ps_ksigner_free(&s);
}

static void test_unsigned(void)
{
	struct ps_ksigner s;
	struct ps_kframe f[8];
	struct ps_kmsg m;
	char err[160], sig[65];
	size_t n;

	CHECK(ps_ksigner_init(&s, "", 0, NULL, err, sizeof(err)) == 0);
	n = build(&s, f, sig, hdr, "{}");
	CHECK(f[2].n == 0);	/* unsigned: the signature frame is empty */
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == 0);
	ps_kmsg_free(&m);
	CHECK(ps_kmsg_parse(&m, f, n, &s, err, sizeof(err)) == 0);	/* no replay check */
	ps_kmsg_free(&m);
}

static void digest_of(unsigned i, unsigned char d[PS_KWIRE_DIGEST])
{
	memset(d, 0xa5, PS_KWIRE_DIGEST);
	for (int b = 0; b < 4; b++)	/* spread over the hash's bytes, as HMAC output is */
		d[b] = d[8 + b] = (unsigned char)(((i * 2654435761u) >> (8 * b)) & 0xff);
	memcpy(d + 16, &i, sizeof(i));
}

static void test_replay_bounded(void)
{
	struct ps_kreplay r;
	unsigned char d[PS_KWIRE_DIGEST];
	const unsigned gen = PS_KREPLAY_SLOTS / 2, total = 2 * gen + 100;
	unsigned fresh = 0, recent_held = 0;

	CHECK(ps_kreplay_init(&r) == 0);
	for (unsigned i = 0; i < total; i++) {
		digest_of(i, d);
		fresh += ps_kreplay_admit(&r, d);
	}
	CHECK(fresh == total);	/* every distinct digest is new */
	for (unsigned i = total - gen; i < total; i++) {	/* the last generation is held */
		digest_of(i, d);
		recent_held += !ps_kreplay_admit(&r, d);
	}
	CHECK(recent_held == gen);
	digest_of(0, d);	/* the oldest is forgotten: memory stays bounded */
	CHECK(ps_kreplay_admit(&r, d));
	memset(d, 0, sizeof(d));
	CHECK(!ps_kreplay_admit(&r, d));	/* the empty-slot pattern is never admitted */
	ps_kreplay_free(&r);
}

static void test_header(void)
{
	char a[512], b[512];
	cJSON *j;

	CHECK(ps_kwire_header(a, sizeof(a), "sess", "status") > 0);
	CHECK(ps_kwire_header(b, sizeof(b), "sess", "status") > 0);
	j = cJSON_Parse(a);
	CHECK(cJSON_IsObject(j));
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(j, "version")), "5.3");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(j, "msg_type")), "status");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(j, "session")), "sess");
	/* ISO 8601, UTC, microseconds: 2026-12-01T19:00:00.123456Z */
	CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(j, "date"))) == 27);
	CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(j, "date"))[26] == 'Z');
	cJSON_Delete(j);
	CHECK(strcmp(a, b) != 0);	/* a fresh msg_id each */
	CHECK(ps_kwire_header(a, 40, "sess", "status") == -1);	/* too small: refused */
}

static void test_utf8(void)
{
	struct ps_kutf8 u = { 0 };
	char *p1 = ps_kutf8_take(&u, "caf\xc3", 4, false);
	char *p2 = ps_kutf8_take(&u, "\xa9 \xff\x00!", 5, false);
	char *p3 = ps_kutf8_take(&u, "\xe2\x82", 2, false);
	char *p4 = ps_kutf8_take(&u, "", 0, true);	/* the cut euro sign never came */

	CHECK_STR(p1, "caf");
	CHECK_STR(p2, "\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd!");
	CHECK_STR(p3, "");
	CHECK_STR(p4, "\xef\xbf\xbd\xef\xbf\xbd");
	CHECK(u.carry_len == 0);
	free(p1);
	free(p2);
	free(p3);
	free(p4);
}

int main(void)
{
	ps_kreplay_init(&replay);
	test_hmac_vector();
	test_parse_and_verify();
	test_unsigned();
	test_replay_bounded();
	test_header();
	test_utf8();
	ps_kreplay_free(&replay);
	return ps_test_done("test_kernel_wire");
}
