/* SHA-256 (FIPS 180-4) and base64 (RFC 4648), for the files a run leaves: the verdict names
 * each by its digest, and over HTTP carries its bytes as base64. Written out here rather
 * than taken from libcrypto, which only the Jupyter kernel links (kernel/, its HMAC): linked
 * into ./pysnip, libcrypto's load made every one-shot `pysnip exec` 0.7-0.8 ms slower (p50
 * 7.4 -> 8.2 ms of a hello world, 2026-12-02, the same code on EVP_Digest and
 * EVP_{En,De}codeBlock, runs alternated). tests/unit/test_outfiles.c checks both against
 * the standards' vectors. */
#include "codec.h"

#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void ps_sha256_hex(const void *data, size_t len, char out[65])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const unsigned char *p = data;
	unsigned char tail[128];
	size_t full = len / 64 * 64, rest = len - full, tl;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t i = 0; i < full; i += 64)
		block(h, p + i);
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t i = 0; i < tl; i += 64)
		block(h, tail + i);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ps_base64_encoded_len(size_t len)
{
	return (len + 2) / 3 * 4;
}

void ps_base64_encode(const void *data, size_t len, char *out)
{
	const unsigned char *p = data;
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

/* Each byte's value in the alphabet above, -1 for none (a strchr per character cost the
 * front ~1.5 ms on a 90 KB file in a request). */
#define B64_RUN(c0, v0, n) B64_##n(c0, v0)
#define B64_1(c, v) [(c)] = (v) + 1
#define B64_2(c, v) B64_1(c, v), B64_1((c) + 1, (v) + 1)
#define B64_4(c, v) B64_2(c, v), B64_2((c) + 2, (v) + 2)
#define B64_8(c, v) B64_4(c, v), B64_4((c) + 4, (v) + 4)
#define B64_10(c, v) B64_8(c, v), B64_2((c) + 8, (v) + 8)
#define B64_16(c, v) B64_8(c, v), B64_8((c) + 8, (v) + 8)
#define B64_26(c, v) B64_16(c, v), B64_10((c) + 16, (v) + 16)
static const signed char b64_plus1[256] = {	/* value + 1, so that 0 (unlisted) means none */
	B64_RUN('A', 0, 26), B64_RUN('a', 26, 26), B64_RUN('0', 52, 10),
	['+'] = 63, ['/'] = 64,
};

static int b64_value(unsigned char c)
{
	return b64_plus1[c] - 1;
}

/* Strict: no whitespace, padding only at the end, length a multiple of 4. */
long ps_base64_decode(const char *in, size_t len, unsigned char *out)
{
	size_t o = 0;

	if (len % 4)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			if (in[i + k] == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64_value((unsigned char)in[i + k])) < 0) {
				return -1;
			}
		}
		uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		out[o++] = (unsigned char)(x >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(x >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)x;
	}
	return (long)o;
}
