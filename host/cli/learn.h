/* `pysnip learn`: cmd_learn.c (rounds, what was learned, the printed policy) and
 * learn_round.c (one round in a process of its own). */
#ifndef PS_LEARN_H
#define PS_LEARN_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

struct ps_learn_input {
	const char *code;
	size_t code_len;
	const char *stdin_data;
	size_t stdin_len;
	uint32_t layers_off;
};

/* Run the snippet once under the policy file, learning. *out: {"verdict": {...}, "syscalls":
 * [{"name", "nr", "count", "refused": "" | "never" | "arguments"}], "threads": bool,
 * "listener": bool, "error": str}. 0, or -1 with err (a policy error starts "policy "). */
int ps_learn_round(const char *policy, const struct ps_learn_input *in, struct cJSON **out,
		   char *err, size_t errlen);

#endif
