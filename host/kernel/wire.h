/* Jupyter's wire format (messaging 5.3): a multipart ZeroMQ message
 *   [identities...] "<IDS|MSG>" signature header parent_header metadata content [buffers...]
 * split into its parts, its signature checked (HMAC-SHA256 over the four JSON frames as they
 * were received, compared in constant time, each one accepted once), and outgoing messages
 * built and signed. No ZeroMQ here: frames are (pointer, length) pairs, so that the parser is
 * fuzzed on its own (tests/fuzz/fuzz_kernel_wire.c). */
#ifndef PS_KERNEL_WIRE_H
#define PS_KERNEL_WIRE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define PS_KWIRE_DELIM "<IDS|MSG>"
#define PS_KWIRE_MAX_IDS 16		/* routing identities before the delimiter */
#define PS_KWIRE_MAX_FRAMES 64		/* the whole message, buffers included */
#define PS_KWIRE_MAX_JSON (16u << 20)	/* one JSON frame: a 16 MiB cell is not a cell */
#define PS_KWIRE_DIGEST 32		/* SHA-256 */

struct ps_kframe {
	const unsigned char *p;
	size_t n;
};

/* The digests already accepted: a message is accepted once (a replay is dropped). Two
 * generations of open-addressing sets, the older forgotten when the newer fills, so that
 * memory stays bounded and the last 2^15..2^16 messages are always remembered. Shared by the
 * shell and control threads (its own lock). */
#define PS_KREPLAY_SLOTS (1u << 16)
struct ps_kreplay {
	pthread_mutex_t lock;
	unsigned char (*gen[2])[PS_KWIRE_DIGEST];	/* gen[0] newer */
	size_t count;					/* entries in gen[0] */
};

/* HMAC-SHA256 with the connection file's key; an empty key means unsigned messages (the
 * signature frame empty, nothing checked). One per thread: a MAC context is not shared. */
struct ps_ksigner {
	void *mac;		/* EVP_MAC_CTX *, NULL when unsigned */
	bool keyed;
	struct ps_kreplay *replay;
};

/* A parsed request. Frames point into the caller's buffers; header and content are parsed. */
struct ps_kmsg {
	struct ps_kframe ids[PS_KWIRE_MAX_IDS];
	size_t nids;
	struct ps_kframe sig, header, parent, metadata, content;
	size_t nbuffers;
	cJSON *hdr;		/* header, an object with string msg_id, msg_type */
	cJSON *body;		/* content, an object */
	const char *msg_type, *msg_id;
};

int ps_ksigner_init(struct ps_ksigner *s, const char *key, size_t keylen,
		    struct ps_kreplay *replay, char *err, size_t errlen);
void ps_ksigner_free(struct ps_ksigner *s);

int ps_kreplay_init(struct ps_kreplay *r);
void ps_kreplay_free(struct ps_kreplay *r);
/* true the first time a digest is seen (and remembers it), false for a replay. */
bool ps_kreplay_admit(struct ps_kreplay *r, const unsigned char d[PS_KWIRE_DIGEST]);

/* Lowercase hex HMAC of the parts, in hex[65]. 0, or -1 when the MAC fails. */
int ps_ksigner_sign(struct ps_ksigner *s, const struct ps_kframe parts[4], char hex[65]);

/* Split, verify and parse frames into m. 0, or -1 with why in err (the message is then
 * dropped, and the why logged): no delimiter, too many frames, bad or replayed signature,
 * header not JSON or without msg_type, content not an object, a frame too large. On success
 * free with ps_kmsg_free. */
int ps_kmsg_parse(struct ps_kmsg *m, const struct ps_kframe *frames, size_t n,
		  struct ps_ksigner *s, char *err, size_t errlen);
void ps_kmsg_free(struct ps_kmsg *m);

/* The header of a new message: a fresh msg_id, ISO 8601 UTC date, version 5.3. Returns the
 * length written to buf (< len), or -1 when it does not fit. */
int ps_kwire_header(char *buf, size_t len, const char *session, const char *msg_type);

#endif
