/* The policy schema: every key the format knows, listed once in a table (key, how to check
 * it, where it lands in struct ps_policy), so that every error names the file, the dotted
 * field and the reason. Unknown keys are errors: a typo in a sandbox policy must never
 * silently fall back to a default. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_impl.h"
#include "seccomp_profile.h"
#include "util/util.h"

#define DAY_MS (24ULL * 3600 * 1000)
#define UID_MAX_VALID 4294967294ULL	/* (uid_t)-1 means "unchanged" to setresuid */

/* ---- names ---- */

static const char *const layer_names[PS_LAYER_COUNT] = {
	[PS_LAYER_PYTHON] = "python",	  [PS_LAYER_IDENTITY] = "identity",
	[PS_LAYER_LANDLOCK] = "landlock", [PS_LAYER_SECCOMP] = "seccomp",
	[PS_LAYER_NAMESPACES] = "namespaces", [PS_LAYER_CGROUP] = "cgroup",
};

static const char *const mode_names[] = {
	[PS_LAYER_REQUIRED] = "required",
	[PS_LAYER_BEST_EFFORT] = "best-effort",
	[PS_LAYER_OFF] = "off",
};

static const char *const action_names[] = {
	[PS_SECCOMP_KILL] = "kill",
	[PS_SECCOMP_KILL_PROCESS] = "kill-process",
	[PS_SECCOMP_ERRNO] = "errno",
};

#define E(x) { #x, x }
static const struct {
	const char *name;
	int value;
} errno_names[] = {
	E(EPERM),  E(ENOENT), E(ESRCH),	 E(EINTR),   E(EIO),	 E(ENXIO),	E(E2BIG),
	E(EBADF),  E(ECHILD), E(EAGAIN), E(ENOMEM),  E(EACCES),	 E(EFAULT),	E(EBUSY),
	E(EEXIST), E(EXDEV),  E(ENODEV), E(ENOTDIR), E(EISDIR),	 E(EINVAL),	E(ENFILE),
	E(EMFILE), E(ENOTTY), E(EFBIG),	 E(ENOSPC),  E(ESPIPE),	 E(EROFS),	E(EPIPE),
	E(ERANGE), E(ENOSYS), E(ENOTSUP), E(EAFNOSUPPORT), E(ENETUNREACH), E(ECONNREFUSED),
	E(ETIMEDOUT),
};
#undef E

int ps_pfail(const struct ps_pctx *c, const char *field, const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	const char *what = c->what ? c->what : "policy";

	if (field)
		snprintf(c->err, c->errlen, "%s %s: %s%s: %s", what, c->file, c->what ? "" : "field ",
			 field, reason);
	else
		snprintf(c->err, c->errlen, "%s %s: %s", what, c->file, reason);
	return -1;
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

static void join_names(const char *const *names, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
}

const char *ps_layer_name(enum ps_layer l)
{
	return (unsigned)l < PS_LAYER_COUNT ? layer_names[l] : "?";
}

int ps_layer_from_name(const char *name)
{
	return name_index(layer_names, PS_LAYER_COUNT, name);
}

const char *ps_layer_mode_name(enum ps_layer_mode m)
{
	return (unsigned)m < PS_ARRAY_LEN(mode_names) ? mode_names[m] : "?";
}

const char *ps_seccomp_action_name(enum ps_seccomp_action a)
{
	return (unsigned)a < PS_ARRAY_LEN(action_names) ? action_names[a] : "?";
}

const char *ps_errno_name(int e)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(errno_names); i++)
		if (errno_names[i].value == e)
			return errno_names[i].name;
	return NULL;
}

/* ---- human units, both ways ---- */

struct unit_kind {
	int (*parse)(const char *s, uint64_t *out, char *err, size_t errlen);
	void (*format)(uint64_t v, char *buf, size_t len);
};

/* CPUs as a decimal ("0.5", "2", "1.25"), kept in thousandths: Docker's --cpus. */
static int parse_cpus(const char *s, uint64_t *out, char *err, size_t errlen)
{
	uint64_t whole = 0, frac = 0, scale = 1000;
	const char *p = s;

	for (; *p >= '0' && *p <= '9' && whole < 1000000; p++)
		whole = whole * 10 + (uint64_t)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
	if (p == s || *p || (whole == 0 && frac == 0)) {
		snprintf(err, errlen, "'%s' is not a number of CPUs (e.g. \"0.5\", \"2\")", s);
		return -1;
	}
	*out = whole * 1000 + frac;
	return 0;
}

static void format_cpus(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
}

static const struct unit_kind size_kind = { ps_parse_size, ps_format_size };
static const struct unit_kind cpus_kind = { parse_cpus, format_cpus };
static const struct unit_kind duration_kind = { ps_parse_duration_ms, ps_format_duration_ms };

/* ---- the field table ---- */

struct field;
typedef int apply_fn(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		     const char *path, struct ps_policy *p);
typedef const char *check_fn(const char *item);	/* NULL if fine, else why not */

struct field {
	const char *key;
	apply_fn *apply;
	size_t off;			/* into struct ps_policy */
	uint64_t min, max;		/* numbers and units */
	const struct unit_kind *unit;	/* sizes and durations */
	check_fn *check;		/* items of string lists, and strings */
	const struct field *sub;	/* sections */
};

#define SLOT(p, f, type) ((type *)(void *)((char *)(p) + (f)->off))

const char *ps_json_type(const struct cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

static int wrong_type(const struct ps_pctx *c, const char *path, const char *want, const cJSON *v)
{
	return ps_pfail(c, path, "expected %s, got %s", want, ps_json_type(v));
}

/* Range check shared by policy files and CLI overrides; reason into buf. */
static int unit_in_range(const struct field *f, uint64_t v, char *buf, size_t len)
{
	char lim[32];

	if (v >= f->min && v <= f->max)
		return 0;
	f->unit->format(v < f->min ? f->min : f->max, lim, sizeof(lim));
	snprintf(buf, len, "must be at %s %s", v < f->min ? "least" : "most", lim);
	return -1;
}

static int parse_unit(const struct field *f, const char *s, uint64_t *out, char *buf, size_t len)
{
	if (f->unit->parse(s, out, buf, len) < 0)
		return -1;
	return unit_in_range(f, *out, buf, len);
}

static int apply_unit(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		      const char *path, struct ps_policy *p)
{
	char reason[256];

	if (!cJSON_IsString(v))
		return ps_pfail(c, path, "expected a string with a unit (e.g. \"%s\"), got %s",
				f->unit == &size_kind ? "256M" : f->unit == &cpus_kind ? "0.5" : "5s",
				ps_json_type(v));
	if (parse_unit(f, v->valuestring, SLOT(p, f, uint64_t), reason, sizeof(reason)) < 0)
		return ps_pfail(c, path, "%s", reason);
	return 0;
}

/* JSON numbers are doubles: insist on a whole, non-negative, in-range value. */
static int get_count(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		     const char *path, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return wrong_type(c, path, "a whole number", v);
	d = v->valuedouble;
	if (d < 0)
		return ps_pfail(c, path, "must not be negative");
	/* The range first: casting a double beyond 2^64 to an integer is undefined. */
	if (d > (double)f->max)
		return ps_pfail(c, path, "must be at most %" PRIu64, f->max);
	if (d != (double)(uint64_t)d)
		return ps_pfail(c, path, "must be a whole number");
	if (d < (double)f->min)
		return ps_pfail(c, path, "must be at least %" PRIu64, f->min);
	*out = (uint64_t)d;
	return 0;
}

static int apply_u64(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		     const char *path, struct ps_policy *p)
{
	return get_count(c, f, v, path, SLOT(p, f, uint64_t));
}

static int apply_u32(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		     const char *path, struct ps_policy *p)
{
	uint64_t n;

	if (get_count(c, f, v, path, &n) < 0)
		return -1;
	*SLOT(p, f, uint32_t) = (uint32_t)n;
	return 0;
}

static int apply_bool(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		      const char *path, struct ps_policy *p)
{
	if (!cJSON_IsBool(v))
		return wrong_type(c, path, "true or false", v);
	*SLOT(p, f, bool) = cJSON_IsTrue(v);
	return 0;
}

static int apply_network(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			 const char *path, struct ps_policy *p)
{
	if (!cJSON_IsBool(v))
		return wrong_type(c, path, "false", v);
	if (cJSON_IsTrue(v))
		return ps_pfail(c, path, "network access is not supported");
	*SLOT(p, f, bool) = false;
	return 0;
}

static int set_string(const struct ps_pctx *c, const char *path, char **slot, const char *s)
{
	char *dup = s ? strdup(s) : NULL;

	if (s && !dup)
		return ps_pfail(c, path, "out of memory");
	free(*slot);
	*slot = dup;
	return 0;
}

static int apply_string(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			const char *path, struct ps_policy *p)
{
	const char *why;

	if (!cJSON_IsString(v))
		return wrong_type(c, path, "a string", v);
	if (f->check && (why = f->check(v->valuestring)))
		return ps_pfail(c, path, "'%s' %s", v->valuestring, why);
	return set_string(c, path, SLOT(p, f, char *), v->valuestring);
}

static int apply_string_or_null(const struct ps_pctx *c, const struct field *f, const cJSON *v,
				const char *path, struct ps_policy *p)
{
	if (cJSON_IsNull(v))
		return set_string(c, path, SLOT(p, f, char *), NULL);
	if (!cJSON_IsString(v))
		return wrong_type(c, path, "a string or null", v);
	return apply_string(c, f, v, path, p);
}

/* "extends" is resolved before anything is applied; here it is only type-checked. */
static int apply_extends(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			 const char *path, struct ps_policy *p)
{
	return cJSON_IsString(v) ? 0 : wrong_type(c, path, "a policy name", v);
}

static int apply_enum(const struct ps_pctx *c, const char *path, const cJSON *v,
		      const char *const *names, size_t n, int *slot)
{
	char known[128];
	int i;

	if (!cJSON_IsString(v))
		return wrong_type(c, path, "a string", v);
	i = name_index(names, n, v->valuestring);
	if (i < 0) {
		join_names(names, n, known, sizeof(known));
		return ps_pfail(c, path, "'%s' is not one of %s", v->valuestring, known);
	}
	*slot = i;
	return 0;
}

static int apply_action(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			const char *path, struct ps_policy *p)
{
	int i;

	if (apply_enum(c, path, v, action_names, PS_ARRAY_LEN(action_names), &i) < 0)
		return -1;
	*SLOT(p, f, enum ps_seccomp_action) = (enum ps_seccomp_action)i;
	return 0;
}

static int apply_mode(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		      const char *path, struct ps_policy *p)
{
	int i;

	if (apply_enum(c, path, v, mode_names, PS_ARRAY_LEN(mode_names), &i) < 0)
		return -1;
	*SLOT(p, f, enum ps_layer_mode) = (enum ps_layer_mode)i;
	return 0;
}

/* An errno for the "errno" action: a name from the table, or a number the kernel accepts
 * in SECCOMP_RET_DATA (1..4095). */
static int apply_errno(const struct ps_pctx *c, const struct field *f, const cJSON *v,
		       const char *path, struct ps_policy *p)
{
	uint64_t n;

	if (cJSON_IsString(v)) {
		for (size_t i = 0; i < PS_ARRAY_LEN(errno_names); i++) {
			if (strcmp(errno_names[i].name, v->valuestring) == 0) {
				*SLOT(p, f, int) = errno_names[i].value;
				return 0;
			}
		}
		return ps_pfail(c, path, "unknown errno name '%s' (use a name like \"EPERM\" or a "
				"number 1..4095)", v->valuestring);
	}
	if (!cJSON_IsNumber(v))
		return wrong_type(c, path, "an errno name or number", v);
	if (get_count(c, f, v, path, &n) < 0)
		return -1;
	*SLOT(p, f, int) = (int)n;
	return 0;
}

static int apply_strlist(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			 const char *path, struct ps_policy *p)
{
	struct ps_strlist l = { 0 }, *slot = SLOT(p, f, struct ps_strlist);
	char item[160];
	const cJSON *e;
	size_t i = 0;

	if (!cJSON_IsArray(v))
		return wrong_type(c, path, "an array of strings", v);
	cJSON_ArrayForEach(e, v) {
		const char *why = NULL;

		snprintf(item, sizeof(item), "%s[%zu]", path, i++);
		if (!cJSON_IsString(e)) {
			ps_strlist_free(&l);
			return wrong_type(c, item, "a string", e);
		}
		if (!*e->valuestring)
			why = "is empty";
		else if (f->check)
			why = f->check(e->valuestring);
		if (why) {
			ps_pfail(c, item, "'%s' %s", e->valuestring, why);
			ps_strlist_free(&l);
			return -1;
		}
		if (ps_strlist_push(&l, e->valuestring) < 0) {
			ps_strlist_free(&l);
			return ps_pfail(c, item, "out of memory");
		}
	}
	/* Lists replace the parent's, never append: a child can narrow a grant. */
	ps_strlist_free(slot);
	*slot = l;
	return 0;
}

static const char *check_module(const char *s)
{
	return ps_module_name_valid(s) ? NULL : "is not a dotted module name";
}

static const char *check_list_name(const char *s)
{
	return ps_policy_name_valid(s) ? NULL
				       : "is not a list name (letters, digits, '-', '_')";
}

static const char *check_abs_path(const char *s)
{
	return s[0] == '/' ? NULL : "is not an absolute path";
}

static const char *check_syscall(const char *s)
{
	for (const char *q = s; *q; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
			return "is not a syscall name";
	return NULL;
}

static const char *check_group(const char *s)
{
	return s[0] == '@' && s[1] ? NULL : "is not a syscall group (groups start with '@')";
}

/* Which file set a list, so that a profile named by a child replaces its parent's and the
 * built-in groups, but not the ones listed beside it (policy.c, after the merge). */
static int apply_seccomp_list(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			      const char *path, struct ps_policy *p)
{
	if (apply_strlist(c, f, v, path, p) < 0)
		return -1;
	if (f->off == offsetof(struct ps_policy, syscall_groups))
		p->groups_level = (int8_t)c->level;
	else
		p->allow_level = (int8_t)c->level;
	return 0;
}

/* *path made absolute in place (kept as it is if that fails: it did open). */
static void absolute(char **path)
{
	char *abs = realpath(*path, NULL);

	if (abs) {
		free(*path);
		*path = abs;
	}
}

/* "seccomp.profile": a Docker/OCI profile file, relative to the policy's own directory; null
 * drops a parent's. Read and checked now, so a bad profile is a policy error. */
static int apply_profile(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			 const char *path, struct ps_policy *p)
{
	struct ps_seccomp_profile *prof = NULL;
	const char *slash = strrchr(c->file, '/');
	char *file = NULL, perr[512];

	(void)f;
	if (!cJSON_IsNull(v) && !(cJSON_IsString(v) && *v->valuestring))
		return wrong_type(c, path, "a profile file name or null", v);
	if (cJSON_IsString(v)) {
		if (v->valuestring[0] == '/' || !slash)
			file = strdup(v->valuestring);
		else if (asprintf(&file, "%.*s/%s", (int)(slash - c->file), c->file,
				  v->valuestring) < 0)
			file = NULL;
		if (!file)
			return ps_pfail(c, path, "out of memory");
		if (ps_seccomp_profile_load(file, &prof, perr, sizeof(perr)) < 0) {
			free(file);
			return ps_pfail(c, path, "%s", perr);
		}
		absolute(&file);	/* so that check-policy's print loads from anywhere */
	}
	ps_seccomp_profile_free(p->seccomp_profile);
	free(p->seccomp_profile_path);
	p->seccomp_profile = prof;
	p->seccomp_profile_path = file;
	p->profile_level = (int8_t)c->level;
	return 0;
}

/* A number of uids, one per worker slot, or "per-process": one per worker's pid. */
static int apply_uid_count(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			   const char *path, struct ps_policy *p)
{
	if (cJSON_IsString(v)) {
		if (strcmp(v->valuestring, "per-process"))
			return ps_pfail(c, path, "'%s' is neither a number of uids nor \"per-process\"",
					v->valuestring);
		p->uid_per_process = true;
		p->uid_count = PS_UID_PER_PROCESS_SPAN;
		return 0;
	}
	if (apply_u32(c, f, v, path, p) < 0)
		return -1;
	p->uid_per_process = false;
	return 0;
}

static apply_fn apply_section;

#define OFF(m) offsetof(struct ps_policy, m)
#define UNIT(k, m, kind, lo, hi) { k, apply_unit, OFF(m), lo, hi, &kind, NULL, NULL }
#define COUNT(k, m, fn, lo, hi) { k, fn, OFF(m), lo, hi, NULL, NULL, NULL }
#define LIST(k, m, chk) { k, apply_strlist, OFF(m), 0, 0, NULL, chk, NULL }
#define LAYER(k, l) { k, apply_mode, OFF(layers[l]), 0, 0, NULL, NULL, NULL }
#define SECTION(k, t) { k, apply_section, 0, 0, 0, NULL, NULL, t }

static const struct field limit_fields[] = {
	UNIT("wall", limits.wall_ms, duration_kind, 1, DAY_MS),
	UNIT("cpu", limits.cpu_ms, duration_kind, 1, DAY_MS),
	UNIT("memory", limits.memory_bytes, size_kind, 1, UINT64_MAX),
	UNIT("output", limits.output_bytes, size_kind, 0, UINT64_MAX),
	UNIT("file_size", limits.file_size_bytes, size_kind, 0, UINT64_MAX),
	COUNT("open_files", limits.open_files, apply_u64, 1, 1 << 20),	/* fs.nr_open */
	COUNT("processes", limits.processes, apply_u64, 1, 4194304),	/* PID_MAX_LIMIT */
	/* At least a page: tmpfs reads size=0 as "no limit", the opposite of what 0 means for
	 * every other limit here (the tightest: no output, no byte of file). */
	UNIT("scratch", limits.scratch_bytes, size_kind, 4096, UINT64_MAX),
	UNIT("cpus", limits.cpus_milli, cpus_kind, 1, 1024000),	/* cgroup v2 only */
	COUNT("output_files", limits.output_files, apply_u64, 0, 100000),
	UNIT("output_files_size", limits.output_files_bytes, size_kind, 0, UINT64_MAX),
	{ 0 },
};

static const struct field module_fields[] = {
	LIST("lists", module_lists, check_list_name),
	LIST("allow", modules_allow, check_module),
	LIST("deny", modules_deny, check_module),
	LIST("paths", python_paths, check_abs_path),
	LIST("internal", modules_internal, check_module),
	{ 0 },
};

static const struct field fs_fields[] = {
	LIST("read", read_paths, check_abs_path),
	LIST("write", write_paths, check_abs_path),
	{ 0 },
};

static const struct field audit_fields[] = {
	LIST("allow", audit_allow, NULL),
	{ 0 },
};

static const struct field seccomp_fields[] = {
	{ "action", apply_action, OFF(seccomp_action), 0, 0, NULL, NULL, NULL },
	{ "errno", apply_errno, OFF(seccomp_errno), 1, 4095, NULL, NULL, NULL },
	{ "groups", apply_seccomp_list, OFF(syscall_groups), 0, 0, NULL, check_group, NULL },
	{ "allow", apply_seccomp_list, OFF(syscalls_allow), 0, 0, NULL, check_syscall, NULL },
	{ "threads", apply_bool, OFF(threads), 0, 0, NULL, NULL, NULL },
	{ "profile", apply_profile, 0, 0, 0, NULL, NULL, NULL },
	{ 0 },
};

static const struct field identity_fields[] = {
	COUNT("uid", uid, apply_u32, 1, UID_MAX_VALID),	/* never root */
	COUNT("gid", gid, apply_u32, 1, UID_MAX_VALID),
	COUNT("uid_count", uid_count, apply_uid_count, 1, 65536),
	{ 0 },
};

static const struct field cgroup_fields[] = {
	{ "parent", apply_string_or_null, OFF(cgroup_parent), 0, 0, NULL, check_abs_path, NULL },
	{ 0 },
};

static const struct field layer_fields[] = {
	LAYER("python", PS_LAYER_PYTHON),
	LAYER("identity", PS_LAYER_IDENTITY),
	LAYER("landlock", PS_LAYER_LANDLOCK),
	LAYER("seccomp", PS_LAYER_SECCOMP),
	LAYER("namespaces", PS_LAYER_NAMESPACES),
	LAYER("cgroup", PS_LAYER_CGROUP),
	{ 0 },
};

static const struct field top_fields[] = {
	{ "extends", apply_extends, 0, 0, 0, NULL, NULL, NULL },
	{ "description", apply_string_or_null, OFF(description), 0, 0, NULL, NULL, NULL },
	SECTION("limits", limit_fields),
	SECTION("modules", module_fields),
	SECTION("filesystem", fs_fields),
	{ "network", apply_network, OFF(network), 0, 0, NULL, NULL, NULL },
	SECTION("audit", audit_fields),
	SECTION("seccomp", seccomp_fields),
	SECTION("identity", identity_fields),
	SECTION("cgroup", cgroup_fields),
	SECTION("layers", layer_fields),
	{ 0 },
};

static const struct field *find_field(const struct field *t, const char *key)
{
	for (; t->key; t++)
		if (strcmp(t->key, key) == 0)
			return t;
	return NULL;
}

static int unknown_key(const struct ps_pctx *c, const struct field *t, const char *path)
{
	char known[256];
	size_t used = 0;

	known[0] = '\0';
	for (size_t i = 0; t[i].key && used < sizeof(known); i++)
		used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
					 t[i].key);
	return ps_pfail(c, path, "unknown key (known: %s)", known);
}

/* Apply every key of object v through table t. Keys absent keep their current value,
 * which is how a child overrides its parent key by key. */
static int apply_object(const struct ps_pctx *c, const struct field *t, const cJSON *v,
			const char *prefix, struct ps_policy *p)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, v) {
		char path[128];
		const struct field *f;

		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", e->string);
		for (const cJSON *prev = v->child; prev != e; prev = prev->next)
			if (strcmp(prev->string, e->string) == 0)
				return ps_pfail(c, path, "duplicate key");
		f = find_field(t, e->string);
		if (!f)
			return unknown_key(c, t, path);
		if (f->apply(c, f, e, path, p) < 0)
			return -1;
	}
	return 0;
}

static int apply_section(const struct ps_pctx *c, const struct field *f, const cJSON *v,
			 const char *path, struct ps_policy *p)
{
	if (!cJSON_IsObject(v))
		return wrong_type(c, path, "an object", v);
	return apply_object(c, f->sub, v, path, p);
}

int ps_policy_apply_json(const struct ps_pctx *c, const struct cJSON *root, struct ps_policy *p)
{
	if (!cJSON_IsObject(root))
		return ps_pfail(c, NULL, "the top level must be a JSON object, not %s",
				ps_json_type(root));
	return apply_object(c, top_fields, root, "", p);
}

int ps_policy_override(struct ps_policy *p, const char *field, const char *value,
		       bool tighten_only, char *err, size_t errlen)
{
	const char *key = strncmp(field, "limits.", 7) == 0 ? field + 7 : field;
	const struct field *f = find_field(limit_fields, key);
	char reason[256], now[32], want[32];
	uint64_t v, *slot;

	if (!f || !f->unit) {
		snprintf(err, errlen, "limits.%s: not a limit that can be overridden (known: wall, "
			 "cpu, memory, output, file_size, scratch, cpus, output_files_size)", key);
		return -1;
	}
	if (parse_unit(f, value, &v, reason, sizeof(reason)) < 0) {
		snprintf(err, errlen, "limits.%s: %s", key, reason);
		return -1;
	}
	slot = SLOT(p, f, uint64_t);
	/* a CPU share is the one limit whose 0 is "none set" (the schema's least is 1): any
	 * share a request names is tighter than none */
	if (tighten_only && v > *slot && !(f->off == offsetof(struct ps_policy, limits.cpus_milli) &&
					   *slot == 0)) {
		f->unit->format(v, want, sizeof(want));
		f->unit->format(*slot, now, sizeof(now));
		snprintf(err, errlen, "limits.%s: %s is looser than the policy's %s", key, want,
			 now);
		return -1;
	}
	*slot = v;
	return 0;
}
