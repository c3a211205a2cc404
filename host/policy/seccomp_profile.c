/* Docker/OCI seccomp profiles -> struct ps_seccomp_profile (a rule list; no libseccomp here).
 *
 * The format is what runc reads: OCI's linux.seccomp (defaultAction, defaultErrnoRet,
 * architectures, flags, syscalls[] {names, action, errnoRet, args[] {index, value, valueTwo,
 * op}}) and Docker's extensions (archMap, a syscall's `name`, `comment`, includes/excludes by
 * caps, arches and minKernel). Every error names the JSON path. Unknown keys are errors, as in
 * a policy: a typo in a sandbox profile must not fall back to something wider or narrower.
 *
 * Docker's conditions are decided for the worker pysnip runs: it holds no capability (an entry
 * that needs one is skipped, one that excludes one applies), its architecture is x86-64
 * (Docker's name "amd64"), its kernel the one running. */
#include "seccomp_profile.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "policy_impl.h"
#include "util/util.h"

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const struct {
	const char *name;
	enum ps_prof_action action;
} actions[] = {
	{ "SCMP_ACT_ALLOW", PS_PACT_ALLOW },	     { "SCMP_ACT_LOG", PS_PACT_LOG },
	{ "SCMP_ACT_ERRNO", PS_PACT_ERRNO },	     { "SCMP_ACT_KILL", PS_PACT_KILL },
	{ "SCMP_ACT_KILL_THREAD", PS_PACT_KILL },   { "SCMP_ACT_KILL_PROCESS", PS_PACT_KILL },
	{ "SCMP_ACT_TRAP", PS_PACT_KILL },	     { "SCMP_ACT_TRACE", PS_PACT_TRACE },
};

static const char *const action_names[] = {
	[PS_PACT_ALLOW] = "allow", [PS_PACT_LOG] = "log", [PS_PACT_ERRNO] = "errno",
	[PS_PACT_KILL] = "kill",   [PS_PACT_TRACE] = "trace",
};

static const char *const ops[] = {
	[PS_POP_NE] = "SCMP_CMP_NE", [PS_POP_LT] = "SCMP_CMP_LT", [PS_POP_LE] = "SCMP_CMP_LE",
	[PS_POP_EQ] = "SCMP_CMP_EQ", [PS_POP_GE] = "SCMP_CMP_GE", [PS_POP_GT] = "SCMP_CMP_GT",
	[PS_POP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

static const char *const scmp_arches[] = NAMES(
	"SCMP_ARCH_NATIVE", "SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_ARM",
	"SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32",
	"SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
	"SCMP_ARCH_PPC64", "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390", "SCMP_ARCH_S390X",
	"SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64", "SCMP_ARCH_LOONGARCH64",
	"SCMP_ARCH_M68K", "SCMP_ARCH_SH", "SCMP_ARCH_SHEB");

/* Docker's includes/excludes "arches": Go's GOARCH names plus Docker's own x86, x32, s390. */
static const char *const docker_arches[] = NAMES(
	"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le",
	"mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv64", "s390", "s390x", "x32",
	"x86", "loongarch64", "sparc", "sparc64");

static const char *const caps[] = NAMES(
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE");

static const struct {
	const char *name;
	unsigned flag;
} flags[] = {
	{ "SECCOMP_FILTER_FLAG_TSYNC", PS_PFLAG_TSYNC },
	{ "SECCOMP_FILTER_FLAG_LOG", PS_PFLAG_LOG },
	{ "SECCOMP_FILTER_FLAG_SPEC_ALLOW", PS_PFLAG_SPEC_ALLOW },
	{ "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", PS_PFLAG_WAIT_KILLABLE_RECV },
};

const char *ps_prof_action_name(enum ps_prof_action a)
{
	return (unsigned)a < PS_ARRAY_LEN(action_names) ? action_names[a] : "?";
}

static bool in_names(const char *const *names, const char *s)
{
	for (; *names; names++)
		if (!strcmp(*names, s))
			return true;
	return false;
}

/* ---- small checked readers: each names the path on error ---- */

/* A JSON path for messages; cut short if it ever were longer than the buffer. */
static void setpath(char *at, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setpath(char *at, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(at, n, fmt, ap);
	va_end(ap);
}

static int expect(const struct ps_pctx *c, const char *path, bool ok, const char *want,
		  const cJSON *v)
{
	return ok ? 0 : ps_pfail(c, path, "expected %s, got %s", want, ps_json_type(v));
}

/* Unknown or duplicate keys of object v: known is NULL-terminated. */
static int check_keys(const struct ps_pctx *c, const char *path, const cJSON *v,
		      const char *const *known)
{
	const cJSON *e;
	char at[160];

	cJSON_ArrayForEach(e, v) {
		setpath(at, sizeof(at), "%s%s%s", path, *path ? "." : "", e->string);
		for (const cJSON *prev = v->child; prev != e; prev = prev->next)
			if (!strcmp(prev->string, e->string))
				return ps_pfail(c, at, "duplicate key");
		if (!in_names(known, e->string))
			return ps_pfail(c, at, "unknown key");
	}
	return 0;
}

/* A whole number 0..max that a double holds exactly (JSON numbers are doubles). */
static int get_uint(const struct ps_pctx *c, const char *path, const cJSON *v, uint64_t max,
		    uint64_t *out)
{
	double d;

	if (expect(c, path, cJSON_IsNumber(v), "a whole number", v) < 0)
		return -1;
	d = v->valuedouble;
	/* The range first: casting a double beyond 2^64 to an integer is undefined. */
	if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
		return ps_pfail(c, path, "%.17g is not a whole number from 0 to 2^53 (larger "
				"values cannot be read exactly from JSON)", d);
	if ((uint64_t)d > max)
		return ps_pfail(c, path, "%.0f is out of range (0..%llu)", d,
				(unsigned long long)max);
	*out = (uint64_t)d;
	return 0;
}

static int get_action(const struct ps_pctx *c, const char *path, const cJSON *v,
		      enum ps_prof_action *out)
{
	if (expect(c, path, cJSON_IsString(v), "an SCMP_ACT_* string", v) < 0)
		return -1;
	for (size_t i = 0; i < PS_ARRAY_LEN(actions); i++) {
		if (!strcmp(actions[i].name, v->valuestring)) {
			*out = actions[i].action;
			return 0;
		}
	}
	if (!strcmp(v->valuestring, "SCMP_ACT_NOTIFY"))
		return ps_pfail(c, path, "SCMP_ACT_NOTIFY needs a seccomp agent; pysnip has none");
	return ps_pfail(c, path, "unknown action '%s' (known: SCMP_ACT_ALLOW, SCMP_ACT_LOG, "
			"SCMP_ACT_ERRNO, SCMP_ACT_KILL, SCMP_ACT_KILL_THREAD, SCMP_ACT_KILL_PROCESS, "
			"SCMP_ACT_TRAP, SCMP_ACT_TRACE)", v->valuestring);
}

/* errnoRet beside an action: only SCMP_ACT_ERRNO takes one (EPERM when absent, as runc). */
static int get_errno(const struct ps_pctx *c, const char *path, const cJSON *v,
		     enum ps_prof_action a, int *out)
{
	uint64_t n;

	*out = 1;	/* EPERM */
	if (!v)
		return 0;
	if (a != PS_PACT_ERRNO)
		return ps_pfail(c, path, "only SCMP_ACT_ERRNO takes an errno, not action '%s'",
				ps_prof_action_name(a));
	if (get_uint(c, path, v, 4095, &n) < 0)
		return -1;
	*out = (int)n;
	return 0;
}

/* An array of strings each in known (NULL: any non-empty string); each item pushed to out
 * (may be NULL). What names the kind in the message. */
static int get_names(const struct ps_pctx *c, const char *path, const cJSON *v,
		     const char *const *known, const char *what, struct ps_strlist *out)
{
	const cJSON *e;
	char at[160];
	size_t i = 0;

	if (cJSON_IsNull(v))	/* Docker writes "subArchitectures": null */
		return 0;
	if (expect(c, path, cJSON_IsArray(v), "an array of strings", v) < 0)
		return -1;
	cJSON_ArrayForEach(e, v) {
		setpath(at, sizeof(at), "%s[%zu]", path, i++);
		if (expect(c, at, cJSON_IsString(e), "a string", e) < 0)
			return -1;
		if (!*e->valuestring || (known && !in_names(known, e->valuestring)))
			return ps_pfail(c, at, "unknown %s '%s'", what, e->valuestring);
		if (out && ps_strlist_push(out, e->valuestring) < 0)
			return ps_pfail(c, at, "out of memory");
	}
	return 0;
}

/* ---- Docker's includes/excludes ---- */

/* "4.8" <= the running kernel's major.minor? */
static int kernel_at_least(const struct ps_pctx *c, const char *path, const cJSON *v, bool *ok)
{
	unsigned want_major, want_minor, major = 0, minor = 0;
	struct utsname u;
	char tail;

	if (expect(c, path, cJSON_IsString(v), "a kernel version string (\"4.8\")", v) < 0)
		return -1;
	if (sscanf(v->valuestring, "%u.%u%c", &want_major, &want_minor, &tail) != 2)
		return ps_pfail(c, path, "'%s' is not a kernel version MAJOR.MINOR", v->valuestring);
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &major, &minor);
	*ok = major > want_major || (major == want_major && minor >= want_minor);
	return 0;
}

/* Does an entry with this includes (include=true) or excludes object apply here? */
static int filter_applies(const struct ps_pctx *c, const char *path, const cJSON *v,
			  bool include, bool *applies)
{
	const cJSON *cps, *arches, *mk;
	struct ps_strlist a = { 0 }, k = { 0 };
	char at[160];
	int ret = -1;

	*applies = true;
	if (!v)
		return 0;
	if (expect(c, path, cJSON_IsObject(v), "an object", v) < 0 ||
	    check_keys(c, path, v, NAMES("caps", "arches", "minKernel")) < 0)
		return -1;
	cps = cJSON_GetObjectItemCaseSensitive(v, "caps");
	arches = cJSON_GetObjectItemCaseSensitive(v, "arches");
	mk = cJSON_GetObjectItemCaseSensitive(v, "minKernel");
	setpath(at, sizeof(at), "%s.caps", path);
	if (cps && get_names(c, at, cps, caps, "capability", &k) < 0)
		goto out;
	setpath(at, sizeof(at), "%s.arches", path);
	if (arches && get_names(c, at, arches, docker_arches, "architecture", &a) < 0)
		goto out;
	if (include) {
		/* The worker holds no capability: an entry for a capability's holders is not ours. */
		if (k.n || (a.n && !ps_strlist_has(&a, "amd64")))
			*applies = false;
	} else if (a.n && ps_strlist_has(&a, "amd64")) {
		*applies = false;	/* excluded caps: we hold none, so they never exclude */
	}
	if (mk) {
		bool ok = false;

		setpath(at, sizeof(at), "%s.minKernel", path);
		if (!include) {
			ps_pfail(c, at, "minKernel belongs in includes, not excludes");
			goto out;
		}
		if (kernel_at_least(c, at, mk, &ok) < 0)
			goto out;
		*applies = *applies && ok;
	}
	ret = 0;
out:
	ps_strlist_free(&a);
	ps_strlist_free(&k);
	return ret;
}

/* ---- one entry of "syscalls" ---- */

static int get_arg(const struct ps_pctx *c, const char *path, const cJSON *v,
		   struct ps_prof_arg *out)
{
	const cJSON *idx, *val, *two, *op;
	char at[160];
	uint64_t n;

	if (expect(c, path, cJSON_IsObject(v), "an object", v) < 0 ||
	    check_keys(c, path, v, NAMES("index", "value", "valueTwo", "op")) < 0)
		return -1;
	idx = cJSON_GetObjectItemCaseSensitive(v, "index");
	val = cJSON_GetObjectItemCaseSensitive(v, "value");
	two = cJSON_GetObjectItemCaseSensitive(v, "valueTwo");
	op = cJSON_GetObjectItemCaseSensitive(v, "op");
	setpath(at, sizeof(at), "%s.index", path);
	if (!idx)
		return ps_pfail(c, at, "missing (the argument's position, 0..5)");
	if (get_uint(c, at, idx, UINT64_MAX, &n) < 0)
		return -1;
	if (n >= 6)
		return ps_pfail(c, at, "%llu: a syscall has 6 arguments, index 0..5",
				(unsigned long long)n);
	out->index = (unsigned)n;
	setpath(at, sizeof(at), "%s.value", path);
	if (!val)
		return ps_pfail(c, at, "missing");
	if (get_uint(c, at, val, UINT64_MAX, &out->value) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.valueTwo", path);
	out->value_two = 0;
	if (two && get_uint(c, at, two, UINT64_MAX, &out->value_two) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.op", path);
	if (!op)
		return ps_pfail(c, at, "missing (an SCMP_CMP_* name)");
	if (expect(c, at, cJSON_IsString(op), "an SCMP_CMP_* string", op) < 0)
		return -1;
	for (size_t i = PS_POP_NE; i < PS_ARRAY_LEN(ops); i++) {
		if (!strcmp(ops[i], op->valuestring)) {
			out->op = (enum ps_prof_op)i;
			return 0;
		}
	}
	return ps_pfail(c, at, "unknown op '%s' (known: SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, "
			"SCMP_CMP_EQ, SCMP_CMP_GE, SCMP_CMP_GT, SCMP_CMP_MASKED_EQ)",
			op->valuestring);
}

static int get_args(const struct ps_pctx *c, const char *path, const cJSON *v,
		    struct ps_prof_rule *r)
{
	const cJSON *e;
	char at[160];
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (expect(c, path, cJSON_IsArray(v), "an array of argument filters", v) < 0)
		return -1;
	r->args = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*r->args));
	if (!r->args)
		return ps_pfail(c, path, "out of memory");
	cJSON_ArrayForEach(e, v) {
		setpath(at, sizeof(at), "%s[%zu]", path, i);
		if (get_arg(c, at, e, &r->args[i]) < 0)
			return -1;
		r->nargs = ++i;
	}
	return 0;
}

static int get_rule(const struct ps_pctx *c, const char *path, const cJSON *v,
		    struct ps_prof_rule *r, bool *applies)
{
	const cJSON *name, *names, *act, *cm;
	char at[160];
	bool inc, exc;

	if (expect(c, path, cJSON_IsObject(v), "an object", v) < 0 ||
	    check_keys(c, path, v, NAMES("name", "names", "action", "errnoRet", "args", "comment",
					 "includes", "excludes")) < 0)
		return -1;
	snprintf(r->where, sizeof(r->where), "%s", path);
	name = cJSON_GetObjectItemCaseSensitive(v, "name");
	names = cJSON_GetObjectItemCaseSensitive(v, "names");
	act = cJSON_GetObjectItemCaseSensitive(v, "action");
	if (!name && !names)
		return ps_pfail(c, path, "no syscall: give \"names\" (or Docker's \"name\")");
	setpath(at, sizeof(at), "%s.name", path);
	if (name && expect(c, at, cJSON_IsString(name) && *name->valuestring, "a syscall name",
			   name) < 0)
		return -1;
	if (name && ps_strlist_push(&r->names, name->valuestring) < 0)
		return ps_pfail(c, at, "out of memory");
	setpath(at, sizeof(at), "%s.names", path);
	if (names && get_names(c, at, names, NULL, "syscall name", &r->names) < 0)
		return -1;
	if (!r->names.n)	/* "names": [] or null, and no "name" */
		return ps_pfail(c, at, "empty: a rule names at least one syscall");
	setpath(at, sizeof(at), "%s.action", path);
	if (!act)
		return ps_pfail(c, at, "missing");
	if (get_action(c, at, act, &r->action) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.errnoRet", path);
	if (get_errno(c, at, cJSON_GetObjectItemCaseSensitive(v, "errnoRet"), r->action,
		      &r->errno_val) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.comment", path);
	if ((cm = cJSON_GetObjectItemCaseSensitive(v, "comment")) &&
	    expect(c, at, cJSON_IsString(cm), "a string", cm) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.args", path);
	if (get_args(c, at, cJSON_GetObjectItemCaseSensitive(v, "args"), r) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.includes", path);
	if (filter_applies(c, at, cJSON_GetObjectItemCaseSensitive(v, "includes"), true, &inc) < 0)
		return -1;
	setpath(at, sizeof(at), "%s.excludes", path);
	if (filter_applies(c, at, cJSON_GetObjectItemCaseSensitive(v, "excludes"), false, &exc) < 0)
		return -1;
	*applies = inc && exc;
	return 0;
}

static void rule_free(struct ps_prof_rule *r)
{
	ps_strlist_free(&r->names);
	free(r->args);
	memset(r, 0, sizeof(*r));
}

static int get_rules(const struct ps_pctx *c, const cJSON *v, struct ps_seccomp_profile *prof)
{
	const cJSON *e;
	char at[32];
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (expect(c, "syscalls", cJSON_IsArray(v), "an array", v) < 0)
		return -1;
	prof->rules = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*prof->rules));
	if (!prof->rules)
		return ps_pfail(c, "syscalls", "out of memory");
	cJSON_ArrayForEach(e, v) {
		struct ps_prof_rule *r = &prof->rules[prof->nrules];
		bool applies = false;

		setpath(at, sizeof(at), "syscalls[%zu]", i++);
		if (get_rule(c, at, e, r, &applies) < 0) {
			rule_free(r);
			return -1;
		}
		if (applies) {
			prof->nrules++;
		} else {
			rule_free(r);
			prof->skipped++;
		}
	}
	return 0;
}

/* ---- the top level ---- */

/* Docker's archMap: for the native architecture, its subArchitectures are asked for. */
static int get_arch_map(const struct ps_pctx *c, const cJSON *v, struct ps_strlist *arches)
{
	const cJSON *e;
	char at[160];
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (expect(c, "archMap", cJSON_IsArray(v), "an array", v) < 0)
		return -1;
	cJSON_ArrayForEach(e, v) {
		const cJSON *arch, *sub;
		bool native;

		setpath(at, sizeof(at), "archMap[%zu]", i++);
		if (expect(c, at, cJSON_IsObject(e), "an object", e) < 0 ||
		    check_keys(c, at, e, NAMES("architecture", "subArchitectures")) < 0)
			return -1;
		arch = cJSON_GetObjectItemCaseSensitive(e, "architecture");
		sub = cJSON_GetObjectItemCaseSensitive(e, "subArchitectures");
		setpath(at, sizeof(at), "archMap[%zu].architecture", i - 1);
		if (!arch || !cJSON_IsString(arch) || !in_names(scmp_arches, arch->valuestring))
			return ps_pfail(c, at, "expected an SCMP_ARCH_* name, got %s",
					arch && cJSON_IsString(arch) ? arch->valuestring
								     : "nothing");
		native = !strcmp(arch->valuestring, "SCMP_ARCH_X86_64");
		setpath(at, sizeof(at), "archMap[%zu].subArchitectures", i - 1);
		if (sub && get_names(c, at, sub, scmp_arches, "architecture",
				     native ? arches : NULL) < 0)
			return -1;
	}
	return 0;
}

static int get_flags(const struct ps_pctx *c, const cJSON *v, unsigned *out)
{
	struct ps_strlist l = { 0 };
	int ret = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (get_names(c, "flags", v, NULL, "flag", &l) < 0) {
		ps_strlist_free(&l);
		return -1;
	}
	for (size_t i = 0; i < l.n && ret == 0; i++) {
		size_t k = 0;

		while (k < PS_ARRAY_LEN(flags) && strcmp(flags[k].name, l.items[i]))
			k++;
		if (k == PS_ARRAY_LEN(flags)) {
			char at[32];

			setpath(at, sizeof(at), "flags[%zu]", i);
			ret = ps_pfail(c, at, "unknown flag '%s'", l.items[i]);
		} else {
			*out |= flags[k].flag;
		}
	}
	ps_strlist_free(&l);
	return ret;
}

static int get_profile(const struct ps_pctx *c, const cJSON *root, struct ps_seccomp_profile *p)
{
	const cJSON *def, *arches;

	if (!cJSON_IsObject(root))
		return ps_pfail(c, NULL, "the top level must be a JSON object, not %s",
				ps_json_type(root));
	if (check_keys(c, "", root, NAMES("defaultAction", "defaultErrnoRet", "architectures",
					  "archMap", "flags", "syscalls", "listenerPath",
					  "listenerMetadata")) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(root, "listenerPath"))
		return ps_pfail(c, "listenerPath", "needs a seccomp agent; pysnip has none");
	if (cJSON_GetObjectItemCaseSensitive(root, "listenerMetadata"))
		return ps_pfail(c, "listenerMetadata", "needs a seccomp agent; pysnip has none");
	def = cJSON_GetObjectItemCaseSensitive(root, "defaultAction");
	if (!def)
		return ps_pfail(c, "defaultAction", "missing");
	if (get_action(c, "defaultAction", def, &p->default_action) < 0 ||
	    get_errno(c, "defaultErrnoRet", cJSON_GetObjectItemCaseSensitive(root, "defaultErrnoRet"),
		      p->default_action, &p->default_errno) < 0)
		return -1;
	/* pysnip is an allowlist: with a default that lets calls through, nothing could keep
	 * the syscalls it never allows (and the argument checks) from passing. */
	if (p->default_action == PS_PACT_ALLOW || p->default_action == PS_PACT_LOG)
		return ps_pfail(c, "defaultAction", "'%s' lets every syscall not named through; "
				"pysnip takes only default-deny profiles (SCMP_ACT_ERRNO, "
				"SCMP_ACT_KILL*, SCMP_ACT_TRAP, SCMP_ACT_TRACE)", def->valuestring);
	arches = cJSON_GetObjectItemCaseSensitive(root, "architectures");
	if (arches && get_names(c, "architectures", arches, scmp_arches, "architecture",
				&p->arches) < 0)
		return -1;
	if (get_arch_map(c, cJSON_GetObjectItemCaseSensitive(root, "archMap"), &p->arches) < 0 ||
	    get_flags(c, cJSON_GetObjectItemCaseSensitive(root, "flags"), &p->flags) < 0)
		return -1;
	return get_rules(c, cJSON_GetObjectItemCaseSensitive(root, "syscalls"), p);
}

static int finish(const struct ps_pctx *c, const char *path, cJSON *root,
		  struct ps_seccomp_profile **out)
{
	struct ps_seccomp_profile *p = calloc(1, sizeof(*p));
	int ret = -1;

	if (!p || !(p->path = strdup(path))) {
		ps_pfail(c, NULL, "out of memory");
		goto out;
	}
	ret = get_profile(c, root, p);
out:
	cJSON_Delete(root);
	if (ret < 0) {
		ps_seccomp_profile_free(p);
		p = NULL;
	}
	*out = p;
	return ret;
}

int ps_seccomp_profile_load(const char *path, struct ps_seccomp_profile **out, char *err,
			    size_t errlen)
{
	struct ps_pctx c = { path, err, errlen, "profile", 0 };
	cJSON *root = NULL;

	*out = NULL;
	if (ps_policy_read_json(&c, path, &root) < 0)
		return -1;
	return finish(&c, path, root, out);
}

int ps_seccomp_profile_parse(const char *name, const char *text, size_t len,
			     struct ps_seccomp_profile **out, char *err, size_t errlen)
{
	struct ps_pctx c = { name, err, errlen, "profile", 0 };
	cJSON *root = NULL;
	char *buf = malloc(len + 1);	/* the JSON reader wants a terminated copy */
	int ret;

	*out = NULL;
	if (!buf)
		return ps_pfail(&c, NULL, "out of memory");
	memcpy(buf, text, len);
	buf[len] = '\0';
	ret = ps_policy_parse_json(&c, buf, len, &root);
	free(buf);
	if (ret < 0)
		return -1;
	return finish(&c, name, root, out);
}

void ps_seccomp_profile_free(struct ps_seccomp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nrules; i++)
		rule_free(&p->rules[i]);
	free(p->rules);
	ps_strlist_free(&p->arches);
	free(p->path);
	free(p);
}

int ps_policy_set_seccomp_profile(struct ps_policy *p, const char *path, char *err,
				  size_t errlen)
{
	struct ps_seccomp_profile *prof;
	char *copy = realpath(path, NULL);	/* absolute, as one named by a policy */

	if (ps_seccomp_profile_load(path, &prof, err, errlen) < 0) {
		free(copy);
		return -1;
	}
	if (!copy && !(copy = strdup(path))) {
		ps_seccomp_profile_free(prof);
		snprintf(err, errlen, "--seccomp-profile: out of memory");
		return -1;
	}
	ps_seccomp_profile_free(p->seccomp_profile);
	free(p->seccomp_profile_path);
	p->seccomp_profile = prof;
	p->seccomp_profile_path = copy;
	ps_strlist_free(&p->syscall_groups);
	ps_strlist_free(&p->syscalls_allow);
	return 0;
}
