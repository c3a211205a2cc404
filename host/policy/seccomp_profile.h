/* Docker/OCI seccomp profiles (the JSON of `docker run --security-opt seccomp=FILE` and of an
 * OCI runtime config's linux.seccomp), read into a list of rules. Nothing here knows syscall
 * numbers or libseccomp: sandbox/seccomp.c resolves the names, applies the rules and then
 * pysnip's floor (what no profile can allow). Docker's conditions (includes/excludes by caps,
 * arches, minKernel) are decided here, for a worker that holds no capability on x86-64. */
#ifndef PS_SECCOMP_PROFILE_H
#define PS_SECCOMP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"

enum ps_prof_action {
	PS_PACT_ALLOW,
	PS_PACT_LOG,		/* allowed, logged by the kernel */
	PS_PACT_ERRNO,		/* fail with errno_val */
	PS_PACT_KILL,		/* SCMP_ACT_KILL, _KILL_THREAD, _KILL_PROCESS, _TRAP: the process dies */
	PS_PACT_TRACE,		/* no tracer is ever attached: the kernel fails it with ENOSYS */
};

/* The same order as libseccomp's enum scmp_compare (NE = 1 ... MASKED_EQ = 7). */
enum ps_prof_op { PS_POP_NE = 1, PS_POP_LT, PS_POP_LE, PS_POP_EQ, PS_POP_GE, PS_POP_GT,
		  PS_POP_MASKED_EQ };

struct ps_prof_arg {
	unsigned index;		/* 0..5 */
	enum ps_prof_op op;
	uint64_t value, value_two;
};

/* One entry of "syscalls": its names share the action and the argument filters. */
struct ps_prof_rule {
	char where[32];			/* "syscalls[12]", for messages */
	struct ps_strlist names;
	enum ps_prof_action action;
	int errno_val;
	struct ps_prof_arg *args;
	size_t nargs;
};

enum ps_prof_flag {
	PS_PFLAG_TSYNC = 1,		/* no effect: the worker is single-threaded when it loads */
	PS_PFLAG_LOG = 2,		/* SECCOMP_FILTER_FLAG_LOG: applied */
	PS_PFLAG_SPEC_ALLOW = 4,	/* refused by the floor: the mitigation stays */
	PS_PFLAG_WAIT_KILLABLE_RECV = 8, /* no effect: only for user notification */
};

struct ps_seccomp_profile {
	char *path;
	enum ps_prof_action default_action;
	int default_errno;
	struct ps_strlist arches;	/* SCMP_ARCH_* asked for besides the native one */
	unsigned flags;			/* enum ps_prof_flag */
	struct ps_prof_rule *rules;
	size_t nrules;
	size_t skipped;			/* entries whose includes/excludes rule them out here */
};

/* Read and check FILE. On error returns -1 with "profile FILE: JSON.PATH: reason" in err. */
int ps_seccomp_profile_load(const char *path, struct ps_seccomp_profile **out, char *err,
			    size_t errlen);
/* The same from text in memory (the fuzz target; name is used in messages). */
int ps_seccomp_profile_parse(const char *name, const char *text, size_t len,
			     struct ps_seccomp_profile **out, char *err, size_t errlen);
void ps_seccomp_profile_free(struct ps_seccomp_profile *prof);

const char *ps_prof_action_name(enum ps_prof_action a);

/* `--seccomp-profile FILE` on the command line: the profile replaces the policy's (and, as
 * for one named in a policy file, its groups and allow list). 0, or -1 with err. */
int ps_policy_set_seccomp_profile(struct ps_policy *p, const char *path, char *err,
				  size_t errlen);

#endif
