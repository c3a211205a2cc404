/* A minimal harness for C unit tests: CHECK records a failure and carries on;
 * ps_test_done() prints "N passed, N failed" and gives the exit status. */
#ifndef PS_TEST_HARNESS_H
#define PS_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

static int ps_t_pass, ps_t_fail;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (cond) {                                                          \
			ps_t_pass++;                                                 \
		} else {                                                             \
			ps_t_fail++;                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
		}                                                                    \
	} while (0)

#define CHECK_STR(got, want)                                                         \
	do {                                                                         \
		const char *g_ = (got), *w_ = (want);                                \
		if (g_ && w_ && strcmp(g_, w_) == 0) {                               \
			ps_t_pass++;                                                 \
		} else {                                                             \
			ps_t_fail++;                                                 \
			fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__,    \
				__LINE__, g_ ? g_ : "(null)", w_ ? w_ : "(null)");   \
		}                                                                    \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                  \
	do {                                                                         \
		const char *h_ = (hay), *n_ = (needle);                              \
		if (h_ && strstr(h_, n_)) {                                          \
			ps_t_pass++;                                                 \
		} else {                                                             \
			ps_t_fail++;                                                 \
			fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n",       \
				__FILE__, __LINE__, h_ ? h_ : "(null)", n_);         \
		}                                                                    \
	} while (0)

static inline int ps_test_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, ps_t_pass, ps_t_fail);
	return ps_t_fail ? 1 : 0;
}

#endif
