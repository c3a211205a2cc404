/* SHA-256 and base64 (codec.c). */
#ifndef PS_CODEC_H
#define PS_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* The digest as 64 lowercase hex digits and a NUL. */
void ps_sha256_hex(const void *data, size_t len, char out[65]);

size_t ps_base64_encoded_len(size_t len);	/* without the NUL */
/* out holds ps_base64_encoded_len(len) + 1 bytes. */
void ps_base64_encode(const void *data, size_t len, char *out);
/* out holds len / 4 * 3 bytes. The decoded length, or -1 when in is not strict base64. */
long ps_base64_decode(const char *in, size_t len, unsigned char *out);

#endif
