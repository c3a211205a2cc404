/* Docker/OCI seccomp profiles (host/policy/seccomp_profile.c): any text either parses or fails
 * with "profile NAME: ...", and a profile that parses keeps its own invariants (names, argument
 * indexes 0..5, errno values only on SCMP_ACT_ERRNO, no default that allows) and becomes a
 * filter (host/sandbox/seccomp.c, the floor applied) or fails with a message: a conflict
 * between two of its rules, never a crash. The policy around it is the shipped default. */
#include "fuzz.h"
#include "policy/policy.h"
#include "policy/seccomp_profile.h"
#include "sandbox/sandbox.h"

static struct ps_policy base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[512];

	if (ps_policy_load("default", &base, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_seccomp_profile: %s (run from a checkout's build-fuzz/)\n",
			err);
		exit(1);
	}
	ps_strlist_free(&base.syscall_groups);	/* a profile is the allowlist */
	return 0;
}

static void check_parsed(const struct ps_seccomp_profile *prof)
{
	FUZZ_CHECK(prof->default_action != PS_PACT_ALLOW && prof->default_action != PS_PACT_LOG,
		   "a default that allows was taken");
	for (size_t i = 0; i < prof->nrules; i++) {
		const struct ps_prof_rule *r = &prof->rules[i];

		FUZZ_CHECK(r->names.n > 0, "%s: a rule without a syscall", r->where);
		FUZZ_CHECK(r->errno_val >= 0 && r->errno_val <= 4095, "%s: errno %d", r->where,
			   r->errno_val);
		for (size_t k = 0; k < r->nargs; k++) {
			FUZZ_CHECK(r->args[k].index < 6, "%s: argument index %u", r->where,
				   r->args[k].index);
			FUZZ_CHECK(r->args[k].op >= PS_POP_NE && r->args[k].op <= PS_POP_MASKED_EQ,
				   "%s: op %d", r->where, r->args[k].op);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_seccomp_profile *prof = NULL;
	struct ps_filter_report rep = { 0 };
	struct ps_filter *f = NULL;
	char err[4096];

	memset(err, 0, sizeof(err));
	if (ps_seccomp_profile_parse("input.json", (const char *)data, size, &prof, err,
				     sizeof(err)) < 0) {
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)) && !strncmp(err, "profile input.json: ", 20),
			   "a failure without a 'profile FILE: ...' message: '%s'", err);
		FUZZ_CHECK(!prof, "a failure that returned a profile");
		return 0;
	}
	check_parsed(prof);
	base.seccomp_profile = prof;
	memset(err, 0, sizeof(err));
	if (ps_filter_build_report(&base, &f, &rep, err, sizeof(err)) < 0)
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)), "the filter failed without a message");
	else
		FUZZ_CHECK(f, "a filter built as nothing");
	base.seccomp_profile = NULL;
	ps_filter_free(f);
	ps_filter_report_free(&rep);
	ps_seccomp_profile_free(prof);
	return 0;
}
