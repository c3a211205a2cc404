/* check-policy: what a policy's native libraries really are (libprobe.c). */
#ifndef PS_LIBPROBE_H
#define PS_LIBPROBE_H

#include "policy/policy.h"

struct cJSON;

/* Where the policy allows numpy: a "libraries" object in root naming the BLAS numpy's core
 * extension loads here, and matplotlib's font cache. Nothing otherwise. */
void ps_libprobe_add(const struct ps_policy *p, struct cJSON *root);

#endif
