/* The signatures already accepted, so that a captured message replayed on the wire is dropped
 * (ipykernel keeps the same history). Bounded: two generations of open-addressing sets of
 * PS_KREPLAY_SLOTS slots each, the newer kept at most half full; when it fills, it becomes the
 * older and the older is forgotten. A digest is uniformly random, so its first bytes are the
 * hash; an all-zero slot is empty (a zero HMAC is as likely as guessing the key). */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define MASK (PS_KREPLAY_SLOTS - 1)

int ps_kreplay_init(struct ps_kreplay *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	for (int g = 0; g < 2; g++) {
		r->gen[g] = calloc(PS_KREPLAY_SLOTS, PS_KWIRE_DIGEST);
		if (!r->gen[g]) {
			ps_kreplay_free(r);
			return -1;
		}
	}
	return 0;
}

void ps_kreplay_free(struct ps_kreplay *r)
{
	for (int g = 0; g < 2; g++) {
		free(r->gen[g]);
		r->gen[g] = NULL;
	}
	pthread_mutex_destroy(&r->lock);
}

static size_t slot_of(const unsigned char *d)
{
	size_t h;

	memcpy(&h, d, sizeof(h));
	return h & MASK;
}

static bool is_empty(const unsigned char *slot)
{
	static const unsigned char zero[PS_KWIRE_DIGEST];

	return !memcmp(slot, zero, PS_KWIRE_DIGEST);
}

/* The slot holding d, or the empty slot where it would go. The set is never more than half
 * full, so the probe ends. */
static unsigned char *probe(unsigned char (*set)[PS_KWIRE_DIGEST], const unsigned char *d)
{
	for (size_t i = slot_of(d);; i = (i + 1) & MASK)
		if (is_empty(set[i]) || !memcmp(set[i], d, PS_KWIRE_DIGEST))
			return set[i];
}

bool ps_kreplay_admit(struct ps_kreplay *r, const unsigned char d[PS_KWIRE_DIGEST])
{
	unsigned char *slot;
	bool fresh = false;

	if (is_empty(d))
		return false;
	pthread_mutex_lock(&r->lock);
	if (!is_empty(probe(r->gen[1], d)))
		goto out;
	slot = probe(r->gen[0], d);
	if (!is_empty(slot))
		goto out;
	if (r->count == PS_KREPLAY_SLOTS / 2) {	/* newer full: it ages, the older goes */
		unsigned char (*old)[PS_KWIRE_DIGEST] = r->gen[1];

		r->gen[1] = r->gen[0];
		r->gen[0] = old;
		memset(old, 0, (size_t)PS_KREPLAY_SLOTS * PS_KWIRE_DIGEST);
		r->count = 0;
		slot = probe(r->gen[0], d);
	}
	memcpy(slot, d, PS_KWIRE_DIGEST);
	r->count++;
	fresh = true;
out:
	pthread_mutex_unlock(&r->lock);
	return fresh;
}
