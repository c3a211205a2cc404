/* Jupyter's wire format: split, verify, parse; headers for new messages (see wire.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "wire.h"

int ps_ksigner_init(struct ps_ksigner *s, const char *key, size_t keylen,
		    struct ps_kreplay *replay, char *err, size_t errlen)
{
	EVP_MAC *mac = NULL;
	EVP_MAC_CTX *ctx = NULL;
	OSSL_PARAM params[2];
	int rc = -1;

	memset(s, 0, sizeof(*s));
	s->replay = replay;
	if (keylen == 0)
		return 0;	/* unsigned: an empty key in the connection file */
	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	if (!ctx) {
		snprintf(err, errlen, "EVP_MAC_fetch(HMAC): not available in libcrypto");
		goto out;
	}
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (!EVP_MAC_init(ctx, (const unsigned char *)key, keylen, params)) {
		snprintf(err, errlen, "EVP_MAC_init(HMAC-SHA256): failed");
		goto out;
	}
	s->mac = ctx;
	s->keyed = true;
	ctx = NULL;
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);	/* the context holds its own reference */
	return rc;
}

void ps_ksigner_free(struct ps_ksigner *s)
{
	EVP_MAC_CTX_free(s->mac);
	s->mac = NULL;
}

static int mac_parts(struct ps_ksigner *s, const struct ps_kframe parts[4],
		     unsigned char d[PS_KWIRE_DIGEST])
{
	size_t n = 0;

	/* A NULL key re-initialises with the key already set (OpenSSL 3 EVP_MAC_init). */
	if (!EVP_MAC_init(s->mac, NULL, 0, NULL))
		return -1;
	for (int i = 0; i < 4; i++)
		if (parts[i].n && !EVP_MAC_update(s->mac, parts[i].p, parts[i].n))
			return -1;
	if (!EVP_MAC_final(s->mac, d, &n, PS_KWIRE_DIGEST) || n != PS_KWIRE_DIGEST)
		return -1;
	return 0;
}

static void to_hex(const unsigned char *d, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * n] = '\0';
}

int ps_ksigner_sign(struct ps_ksigner *s, const struct ps_kframe parts[4], char hex[65])
{
	unsigned char d[PS_KWIRE_DIGEST];

	hex[0] = '\0';
	if (!s->keyed)
		return 0;
	if (mac_parts(s, parts, d) < 0)
		return -1;
	to_hex(d, sizeof(d), hex);
	return 0;
}

/* The signature frame against our own MAC of the four parts, in constant time: the hex is
 * compared as text (the sender's case is ours: Jupyter signs with lowercase hexdigest). */
static int verify(struct ps_ksigner *s, const struct ps_kmsg *m, char *err, size_t errlen)
{
	const struct ps_kframe parts[4] = { m->header, m->parent, m->metadata, m->content };
	unsigned char d[PS_KWIRE_DIGEST];
	char hex[2 * PS_KWIRE_DIGEST + 1];

	if (!s->keyed)
		return 0;
	if (m->sig.n != 2 * PS_KWIRE_DIGEST) {
		snprintf(err, errlen, "bad signature (%zu bytes, not a 64-digit HMAC-SHA256)",
			 m->sig.n);
		return -1;
	}
	if (mac_parts(s, parts, d) < 0) {
		snprintf(err, errlen, "HMAC-SHA256 failed in libcrypto");
		return -1;
	}
	to_hex(d, sizeof(d), hex);
	if (CRYPTO_memcmp(hex, m->sig.p, sizeof(hex) - 1) != 0) {
		snprintf(err, errlen, "bad signature (HMAC-SHA256 mismatch)");
		return -1;
	}
	if (s->replay && !ps_kreplay_admit(s->replay, d)) {
		snprintf(err, errlen, "replayed signature (this message was accepted before)");
		return -1;
	}
	return 0;
}

/* A JSON frame into an object: cJSON wants a NUL-terminated copy of a frame that has none. */
static cJSON *parse_object(struct ps_kframe f, const char *what, char *err, size_t errlen)
{
	char *text;
	cJSON *j;

	if (f.n > PS_KWIRE_MAX_JSON) {
		snprintf(err, errlen, "%s too large (%zu bytes, at most %u)", what, f.n,
			 PS_KWIRE_MAX_JSON);
		return NULL;
	}
	text = malloc(f.n + 1);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", what);
		return NULL;
	}
	memcpy(text, f.p, f.n);
	text[f.n] = '\0';
	j = cJSON_ParseWithLength(text, f.n);
	free(text);
	if (!cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s is not a JSON object", what);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

static const char *string_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static int split(struct ps_kmsg *m, const struct ps_kframe *f, size_t n, char *err,
		 size_t errlen)
{
	const size_t dl = sizeof(PS_KWIRE_DELIM) - 1;
	size_t i;

	if (n > PS_KWIRE_MAX_FRAMES) {
		snprintf(err, errlen, "too many frames (%zu, at most %d)", n, PS_KWIRE_MAX_FRAMES);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (f[i].n == dl && !memcmp(f[i].p, PS_KWIRE_DELIM, dl))
			break;
	if (i == n) {
		snprintf(err, errlen, "no <IDS|MSG> delimiter in %zu frames", n);
		return -1;
	}
	if (i > PS_KWIRE_MAX_IDS) {
		snprintf(err, errlen, "too many identities (%zu, at most %d)", i, PS_KWIRE_MAX_IDS);
		return -1;
	}
	if (n - i - 1 < 5) {
		snprintf(err, errlen, "%zu frames after the delimiter, at least 5 needed",
			 n - i - 1);
		return -1;
	}
	memcpy(m->ids, f, i * sizeof(*f));
	m->nids = i;
	m->sig = f[i + 1];
	m->header = f[i + 2];
	m->parent = f[i + 3];
	m->metadata = f[i + 4];
	m->content = f[i + 5];
	m->nbuffers = n - i - 6;
	return 0;
}

int ps_kmsg_parse(struct ps_kmsg *m, const struct ps_kframe *frames, size_t n,
		  struct ps_ksigner *s, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (split(m, frames, n, err, errlen) < 0 || verify(s, m, err, errlen) < 0)
		return -1;
	m->hdr = parse_object(m->header, "header", err, errlen);
	if (!m->hdr)
		goto bad;
	m->msg_type = string_field(m->hdr, "msg_type");
	m->msg_id = string_field(m->hdr, "msg_id");
	if (!m->msg_type || !m->msg_id) {
		snprintf(err, errlen, "header without a msg_type or msg_id string");
		goto bad;
	}
	m->body = parse_object(m->content, "content", err, errlen);
	if (!m->body)
		goto bad;
	return 0;
bad:
	ps_kmsg_free(m);
	return -1;
}

void ps_kmsg_free(struct ps_kmsg *m)
{
	cJSON_Delete(m->hdr);
	cJSON_Delete(m->body);
	m->hdr = m->body = NULL;
	m->msg_type = m->msg_id = NULL;
}

int ps_kwire_header(char *buf, size_t len, const char *session, const char *msg_type)
{
	static atomic_ulong counter;
	struct timeval tv;
	struct tm tm;
	char date[40];
	int n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = (int)strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(date + n, sizeof(date) - (size_t)n, ".%06ldZ", (long)tv.tv_usec);
	/* msg_id as jupyter_client's Session makes it: session, pid, a counter; unique for
	 * the kernel's life without a random draw per message. */
	n = snprintf(buf, len,
		     "{\"msg_id\":\"%s_%d_%lu\",\"session\":\"%s\",\"username\":\"pysnip\","
		     "\"date\":\"%s\",\"msg_type\":\"%s\",\"version\":\"5.3\"}",
		     session, (int)getpid(), atomic_fetch_add(&counter, 1) + 1, session, date,
		     msg_type);
	return n > 0 && (size_t)n < len ? n : -1;
}
