/* `pysnip serve` request bodies (host/serve/server_request.c): any body, as /v1/exec or as
 * /v1/batch, is either a job or a refusal naming a field and a reason. A job's limits only
 * ever tighten its policy's (the request cannot loosen a sandbox), its code is the whole
 * string, its batch has 1..PS_SERVE_BATCH_MAX inputs; a refusal's field and reason are
 * non-empty text (valid UTF-8: they go back to the client in a JSON error). A body with a raw
 * NUL byte is refused: JSON has none, and in a string it would end the C string, silently
 * running less code than was sent (cJSON itself lets it through). The served
 * policies are the repository's, loaded as the server loads them. */
#include "fuzz.h"
#include "serve/server.h"
#include "util/util.h"

static struct ps_policy policies[3];
static size_t npolicies;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const names[] = { "default", "strict", "notebook" };
	char err[1024];

	for (size_t i = 0; i < PS_ARRAY_LEN(names); i++) {
		if (ps_policy_load(names[i], &policies[npolicies], err, sizeof(err)) < 0) {
			fprintf(stderr, "fuzz_request: %s (policies/ is found next to the binary "
				"or one directory up)\n", err);
			exit(1);
		}
		npolicies++;
	}
	return 0;
}

#define LIMIT_FIELDS(X)                                                                    \
	X(wall_ms) X(cpu_ms) X(memory_bytes) X(output_bytes) X(file_size_bytes) X(open_files) \
	X(processes) X(scratch_bytes)

static void check_job(const struct ps_job *j, bool batch)
{
	const struct ps_limits *want = &policies[j->policy].limits;

	FUZZ_CHECK(j->policy < npolicies, "policy index %zu of %zu", j->policy, npolicies);
	FUZZ_CHECK(j->code && j->code_len == strlen(j->code), "code length %zu", j->code_len);
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)j->code, j->code_len),
		   "the code is not UTF-8");
	if (batch)
		FUZZ_CHECK(j->n >= 1 && j->n <= PS_SERVE_BATCH_MAX, "a batch of %zu", j->n);
	else
		FUZZ_CHECK(j->n == 1, "a single run with %zu inputs", j->n);
	for (size_t i = 0; i < j->n; i++) {
		FUZZ_CHECK(!batch || j->stdins[i], "batch input %zu is NULL", i);
		FUZZ_CHECK(!j->stdins[i] || fuzz_utf8_valid((const unsigned char *)j->stdins[i],
							    strlen(j->stdins[i])),
			   "stdin %zu is not UTF-8", i);
	}
#define TIGHTER(f)                                                                         \
	FUZZ_CHECK(j->limits.f <= want->f, "limits." #f " loosened: %ju > the policy's %ju", \
		   (uintmax_t)j->limits.f, (uintmax_t)want->f);
	LIMIT_FIELDS(TIGHTER)
#undef TIGHTER
	/* The schema's minimums (policy_fields.c); output, file_size and scratch may be 0. */
	FUZZ_CHECK(j->limits.wall_ms >= 1 && j->limits.cpu_ms >= 1 && j->limits.memory_bytes >= 1,
		   "a zero limit: wall %ju ms, cpu %ju ms, memory %ju",
		   (uintmax_t)j->limits.wall_ms, (uintmax_t)j->limits.cpu_ms,
		   (uintmax_t)j->limits.memory_bytes);
}

static void check_refusal(const struct ps_bad *b, bool body_utf8)
{
	size_t flen = strnlen(b->field, sizeof(b->field));
	size_t rlen = strnlen(b->reason, sizeof(b->reason));

	FUZZ_CHECK(flen < sizeof(b->field) && rlen < sizeof(b->reason), "unterminated");
	FUZZ_CHECK(rlen > 0, "a refusal without a reason (field '%s')", b->field);
	if (!body_utf8)
		return;
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)b->field, flen),
		   "the field named is not UTF-8: '%s'", b->field);
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)b->reason, rlen),
		   "the reason is not UTF-8: '%s'", b->reason);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool utf8 = fuzz_utf8_valid(data, size);

	for (int batch = 0; batch < 2; batch++) {
		struct ps_job j;
		struct ps_bad b;

		memset(&b, 0, sizeof(b));
		if (ps_job_parse((const char *)data, size, batch, policies, npolicies, &j, &b) == 0) {
			FUZZ_CHECK(!memchr(data, '\0', size), "a body with a NUL byte was accepted");
			check_job(&j, batch);
		} else
			check_refusal(&b, utf8);
		ps_job_free(&j);
	}
	return 0;
}
