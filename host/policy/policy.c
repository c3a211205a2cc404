/* Policies: find the file, read it defensively (size, UTF-8, NUL), resolve one level of
 * "extends", apply parent then child over the built-in defaults, check what spans fields,
 * and print the result. The schema itself is policy_fields.c. */
#include "policy.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy_impl.h"
#include "seccomp_profile.h"
#include "util/util.h"

#define POLICY_MAX_BYTES (1024 * 1024)

/* ---- reading a file ---- */

/* Well-formed UTF-8 (Unicode Table 3-7): by lead byte, how many continuation bytes follow
 * and the range of the first one (which is what rules out overlongs, surrogates and
 * anything past U+10FFFF); later continuation bytes are 80..BF. */
static const struct {
	unsigned char lead_lo, lead_hi, more, first_lo, first_hi;
} utf8_forms[] = {
	{ 0x00, 0x7f, 0, 0, 0 },	  { 0xc2, 0xdf, 1, 0x80, 0xbf },
	{ 0xe0, 0xe0, 2, 0xa0, 0xbf }, { 0xe1, 0xec, 2, 0x80, 0xbf },
	{ 0xed, 0xed, 2, 0x80, 0x9f }, { 0xee, 0xef, 2, 0x80, 0xbf },
	{ 0xf0, 0xf0, 3, 0x90, 0xbf }, { 0xf1, 0xf3, 3, 0x80, 0xbf },
	{ 0xf4, 0xf4, 3, 0x80, 0x8f },
};

/* Length of the well-formed sequence at s (at most len bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(utf8_forms); i++) {
		size_t more = utf8_forms[i].more;

		if (s[0] < utf8_forms[i].lead_lo || s[0] > utf8_forms[i].lead_hi)
			continue;
		if (more >= len)
			return 0;
		if (more && (s[1] < utf8_forms[i].first_lo || s[1] > utf8_forms[i].first_hi))
			return 0;
		for (size_t k = 2; k <= more; k++)
			if (s[k] < 0x80 || s[k] > 0xbf)
				return 0;
		return more + 1;
	}
	return 0;
}

/* Offset of the first byte that is not well-formed UTF-8, or -1. */
static long utf8_bad_offset(const unsigned char *s, size_t len)
{
	for (size_t i = 0, n; i < len; i += n)
		if (!(n = utf8_seq(s + i, len - i)))
			return (long)i;
	return -1;
}

static void line_col(const char *buf, size_t pos, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < pos && buf[i]; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int read_text(const struct ps_pctx *c, const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	int ret;

	if (fd < 0)
		return ps_pfail(c, NULL, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ps_pfail(c, NULL, "not a regular file");
	}
	if (st.st_size > POLICY_MAX_BYTES) {
		close(fd);
		return ps_pfail(c, NULL, "file too large (%jd bytes, the limit is %d)",
				(intmax_t)st.st_size, POLICY_MAX_BYTES);
	}
	ret = ps_read_fd(fd, buf, len, POLICY_MAX_BYTES + 1);
	close(fd);
	if (ret == -EFBIG)
		return ps_pfail(c, NULL, "file too large (the limit is %d bytes)", POLICY_MAX_BYTES);
	if (ret < 0)
		return ps_pfail(c, NULL, "cannot read: %s", strerror(-ret));
	return 0;
}

/* cJSON would silently cut a string at "\u0000" (and at a raw NUL byte): reject both,
 * so what the policy says is what the sandbox gets. */
static int check_text(const struct ps_pctx *c, const char *buf, size_t len)
{
	const char *nul = memchr(buf, '\0', len);
	long bad = utf8_bad_offset((const unsigned char *)buf, len);
	size_t line, col;

	if (len == 0 || strspn(buf, " \t\r\n") == len)
		return ps_pfail(c, NULL, "empty file");
	if (nul) {
		line_col(buf, (size_t)(nul - buf), &line, &col);
		return ps_pfail(c, NULL, "NUL byte at line %zu, column %zu", line, col);
	}
	if (bad >= 0) {
		line_col(buf, (size_t)bad, &line, &col);
		return ps_pfail(c, NULL, "not valid UTF-8 at line %zu, column %zu (byte %ld)", line,
				col, bad);
	}
	if (strstr(buf, "\\u0000")) {
		line_col(buf, (size_t)(strstr(buf, "\\u0000") - buf), &line, &col);
		return ps_pfail(c, NULL, "\\u0000 in a string at line %zu, column %zu", line, col);
	}
	return 0;
}

int ps_policy_parse_json(const struct ps_pctx *c, const char *buf, size_t len, cJSON **root)
{
	const char *end = NULL;
	size_t line, col;

	if (check_text(c, buf, len) < 0)
		return -1;
	*root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, true);
	if (!*root) {
		line_col(buf, end ? (size_t)(end - buf) : 0, &line, &col);
		return ps_pfail(c, NULL, "invalid JSON near line %zu, column %zu", line, col);
	}
	return 0;
}

int ps_policy_read_json(const struct ps_pctx *c, const char *path, cJSON **root)
{
	char *buf = NULL;
	size_t len;
	int ret;

	if (read_text(c, path, &buf, &len) < 0)
		return -1;
	ret = ps_policy_parse_json(c, buf, len, root);
	free(buf);
	return ret;
}

/* ---- names and paths ---- */

static bool is_path(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') || (n >= 5 && strcmp(s + n - 5, ".json") == 0);
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "default, notebook, strict": the policies a name could have meant. */
static void known_policies(const char *dir, char *buf, size_t len)
{
	struct ps_strlist l = { 0 };
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t used = 0;

	snprintf(buf, len, "none");
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 5 && strcmp(de->d_name + n - 5, ".json") == 0) {
			de->d_name[n - 5] = '\0';
			if (ps_policy_name_valid(de->d_name))
				ps_strlist_push(&l, de->d_name);
		}
	}
	closedir(d);
	if (l.n)
		qsort(l.items, l.n, sizeof(*l.items), cmp_str);
	for (size_t i = 0; i < l.n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", l.items[i]);
	ps_strlist_free(&l);
}

static int not_found(const char *name, const char *dir, char *err, size_t errlen)
{
	char known[512];

	known_policies(dir, known, sizeof(known));
	snprintf(err, errlen, "policy %s: not found in %s (known: %s)", name, dir, known);
	return -1;
}

/* The stem of ".../strict.json" is "strict". */
static char *stem(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".json") == 0)
		n -= 5;
	return strndup(base, n);
}

/* NAME or PATH to a file path (malloc'd), or -1 with the error. */
static int resolve(const char *arg, char **path, char *err, size_t errlen)
{
	const char *dir = ps_policy_dir();

	if (is_path(arg)) {
		*path = strdup(arg);
	} else {
		if (!ps_policy_name_valid(arg))
			return not_found(arg, dir, err, errlen);
		if (asprintf(path, "%s/%s.json", dir, arg) < 0)
			*path = NULL;
		else if (!is_file(*path)) {
			free(*path);
			*path = NULL;
			return not_found(arg, dir, err, errlen);
		}
	}
	if (!*path) {
		snprintf(err, errlen, "policy %s: out of memory", arg);
		return -1;
	}
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The parent named by "extends": next to the child first, then in the policy directory. */
static int find_parent(const struct ps_pctx *c, const char *child, const char *name,
		       char *out, size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(child, '/');

	if (!ps_policy_name_valid(name))
		return ps_pfail(c, "extends", "'%s' is not a policy name (letters, digits, '-', "
				"'_'; a name, not a path)", name);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == child)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - child), child);
	snprintf(out, len, "%s/%s.json", dir, name);
	if (!is_file(out)) {
		snprintf(out, len, "%s/%s.json", ps_policy_dir(), name);
		if (!is_file(out))
			return ps_pfail(c, "extends", "parent policy '%s' not found in %s or %s",
					name, dir, ps_policy_dir());
	}
	if (same_file(out, child))
		return ps_pfail(c, "extends", "a policy cannot extend itself");
	return 0;
}

/* ---- defaults, checks, load ---- */

/* What a root policy gets for every key it leaves out: the same as policies/default.json,
 * so a policy that says nothing is still a tight sandbox. */
static int set_defaults(struct ps_policy *p)
{
	static const char *const groups[] = { "@python-runtime", "@basic-io", "@memory",
					      "@time",		 "@signals",  "@fs-read",
					      "@fs-write",	 "@process-info" };
	static const enum ps_layer_mode modes[PS_LAYER_COUNT] = {
		[PS_LAYER_PYTHON] = PS_LAYER_REQUIRED,	 [PS_LAYER_IDENTITY] = PS_LAYER_REQUIRED,
		[PS_LAYER_LANDLOCK] = PS_LAYER_REQUIRED, [PS_LAYER_SECCOMP] = PS_LAYER_REQUIRED,
		[PS_LAYER_NAMESPACES] = PS_LAYER_BEST_EFFORT, [PS_LAYER_CGROUP] = PS_LAYER_OFF,
	};

	p->limits = (struct ps_limits){
		.output_files = 64,
		.output_files_bytes = 16ULL << 20,
		.wall_ms = 5000,
		.cpu_ms = 2000,
		.memory_bytes = 256ULL << 20,
		.output_bytes = 1ULL << 20,
		.file_size_bytes = 16ULL << 20,
		.open_files = 64,
		.processes = 1,
		.scratch_bytes = 64ULL << 20,
	};
	p->network = false;
	p->seccomp_action = PS_SECCOMP_KILL;
	p->seccomp_errno = EPERM;
	p->threads = false;
	/* 0x70000000: above the subordinate ranges useradd hands out (100000 on, 65536 each, up
	 * to 600100000) and systemd's container range (524288..1879048191), in the span systemd
	 * documents as unused; ps_identity_check_range verifies it on this host. */
	p->uid = p->gid = 1879048192;
	p->uid_per_process = true;
	p->uid_count = PS_UID_PER_PROCESS_SPAN;
	memcpy(p->layers, modes, sizeof(modes));
	if (ps_strlist_push(&p->module_lists, "default") < 0)
		return -ENOMEM;
	for (size_t i = 0; i < PS_ARRAY_LEN(groups); i++)
		if (ps_strlist_push(&p->syscall_groups, groups[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* Rules that span fields, checked on the merged result (so a child that breaks one
 * by changing a single key is told which key). */
static int check_merged(const struct ps_pctx *c, const struct ps_policy *p)
{
	if ((uint64_t)p->uid + p->uid_count - 1 > 4294967294ULL)
		return ps_pfail(c, "identity.uid_count", "uid range %" PRIu32 "..%" PRIu64
				" passes 4294967294", p->uid, (uint64_t)p->uid + p->uid_count - 1);
	/* ids from 2^31 on read as negative to much software (and to the verdict's int32) */
	if (p->uid_per_process && ((uint64_t)p->uid + p->uid_count - 1 > INT32_MAX ||
				   (uint64_t)p->gid + p->uid_count - 1 > INT32_MAX))
		return ps_pfail(c, "identity.uid_count", "\"per-process\" needs uid and gid + %u "
				"below 2^31 (got uid %" PRIu32 ", gid %" PRIu32 ")",
				PS_UID_PER_PROCESS_SPAN, p->uid, p->gid);
	if (p->threads && p->limits.processes < 2)
		return ps_pfail(c, "seccomp.threads", "threads need limits.processes of at "
				"least 2 (the main thread counts)");
	if (p->layers[PS_LAYER_CGROUP] == PS_LAYER_REQUIRED && !p->cgroup_parent)
		return ps_pfail(c, "layers.cgroup", "'required' needs cgroup.parent (a delegated "
				"cgroup v2 directory)");
	return 0;
}

/* A profile is the allowlist in place of the built-in groups and of what a parent listed;
 * groups and syscalls listed in the file that names the profile (or in its child) are added. */
static void drop_lists_under_profile(struct ps_policy *p)
{
	if (!p->seccomp_profile)
		return;
	if (p->groups_level < p->profile_level)
		ps_strlist_free(&p->syscall_groups);
	if (p->allow_level < p->profile_level)
		ps_strlist_free(&p->syscalls_allow);
}

/* The parent, if any, applied onto p. Its own errors name its own file. */
static int apply_parent(const struct ps_pctx *c, const cJSON *root, struct ps_policy *p)
{
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "extends");
	char ppath[PATH_MAX + 64];
	struct ps_pctx pc = { ppath, c->err, c->errlen, NULL, 1 };
	cJSON *proot = NULL;
	const cJSON *pext;
	int ret = -1;

	if (!ext)
		return 0;
	if (!cJSON_IsString(ext))
		return ps_pfail(c, "extends", "expected a policy name, got %s", ps_json_type(ext));
	if (find_parent(c, p->path, ext->valuestring, ppath, sizeof(ppath)) < 0)
		return -1;
	p->extends = strdup(ext->valuestring);
	if (!p->extends)
		return ps_pfail(c, "extends", "out of memory");
	if (ps_policy_read_json(&pc, ppath, &proot) < 0)
		return -1;
	pext = cJSON_IsObject(proot) ? cJSON_GetObjectItemCaseSensitive(proot, "extends") : NULL;
	if (pext) {
		ps_pfail(c, "extends", "parent '%s' itself extends '%s' (extends chain deeper than "
			 "one level)", ext->valuestring,
			 cJSON_IsString(pext) ? pext->valuestring : "?");
		goto out;
	}
	ret = ps_policy_apply_json(&pc, proot, p);
out:
	cJSON_Delete(proot);
	return ret;
}

int ps_policy_load(const char *name_or_path, struct ps_policy *out, char *err, size_t errlen)
{
	struct ps_pctx c = { name_or_path, err, errlen, NULL, 2 };
	cJSON *root = NULL;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	if (resolve(name_or_path, &out->path, err, errlen) < 0)
		goto out;
	c.file = out->path;
	out->name = stem(out->path);
	if (!out->name || set_defaults(out) < 0) {
		ps_pfail(&c, NULL, "out of memory");
		goto out;
	}
	if (ps_policy_read_json(&c, out->path, &root) < 0)
		goto out;
	if (!cJSON_IsObject(root)) {
		ps_policy_apply_json(&c, root, out);	/* names the type */
		goto out;
	}
	if (apply_parent(&c, root, out) < 0 || ps_policy_apply_json(&c, root, out) < 0 ||
	    check_merged(&c, out) < 0)
		goto out;
	drop_lists_under_profile(out);
	ret = 0;
out:
	cJSON_Delete(root);
	if (ret < 0)
		ps_policy_free(out);
	return ret;
}

void ps_policy_free(struct ps_policy *p)
{
	struct ps_strlist *lists[] = { &p->module_lists, &p->modules_allow, &p->modules_deny,
				       &p->python_paths, &p->read_paths,    &p->write_paths,
				       &p->modules_internal,
				       &p->audit_allow,	 &p->syscall_groups, &p->syscalls_allow };

	for (size_t i = 0; i < PS_ARRAY_LEN(lists); i++)
		ps_strlist_free(lists[i]);
	free(p->name);
	free(p->path);
	free(p->extends);
	free(p->cgroup_parent);
	free(p->description);
	free(p->seccomp_profile_path);
	ps_seccomp_profile_free(p->seccomp_profile);
	memset(p, 0, sizeof(*p));
}

/* ---- printing ---- */

/* Raw, so 64-bit values print exactly (cJSON numbers are doubles). */
static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	cJSON_AddRawToObject(o, key, num);
}

static void add_unit(cJSON *o, const char *key, uint64_t v,
		     void (*format)(uint64_t, char *, size_t))
{
	char text[32];

	format(v, text, sizeof(text));
	cJSON_AddStringToObject(o, key, text);
}

static void add_list(cJSON *o, const char *key, const struct ps_strlist *l)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);

	for (size_t i = 0; a && i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->items[i]));
}

static void add_nullable(cJSON *o, const char *key, const char *s)
{
	if (s)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

static char *print(cJSON *o, bool pretty)
{
	char *s = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	return s;
}

cJSON *ps_limits_to_cjson(const struct ps_limits *l)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	add_u64(o, "wall_ms", l->wall_ms);
	add_u64(o, "cpu_ms", l->cpu_ms);
	add_u64(o, "memory_bytes", l->memory_bytes);
	add_u64(o, "output_bytes", l->output_bytes);
	add_u64(o, "file_size_bytes", l->file_size_bytes);
	add_u64(o, "open_files", l->open_files);
	add_u64(o, "processes", l->processes);
	add_u64(o, "scratch_bytes", l->scratch_bytes);
	if (l->cpus_milli)
		add_u64(o, "cpus_milli", l->cpus_milli);
	add_u64(o, "output_files", l->output_files);
	add_u64(o, "output_files_bytes", l->output_files_bytes);
	return o;
}

static void add_limits(cJSON *root, const struct ps_limits *l)
{
	cJSON *o = cJSON_AddObjectToObject(root, "limits");

	if (!o)
		return;
	add_unit(o, "wall", l->wall_ms, ps_format_duration_ms);
	add_unit(o, "cpu", l->cpu_ms, ps_format_duration_ms);
	add_unit(o, "memory", l->memory_bytes, ps_format_size);
	add_unit(o, "output", l->output_bytes, ps_format_size);
	add_unit(o, "file_size", l->file_size_bytes, ps_format_size);
	add_u64(o, "open_files", l->open_files);
	add_u64(o, "processes", l->processes);
	add_unit(o, "scratch", l->scratch_bytes, ps_format_size);
	if (l->cpus_milli) {
		char c[32];

		snprintf(c, sizeof(c), "%" PRIu64 ".%03" PRIu64, l->cpus_milli / 1000,
			 l->cpus_milli % 1000);
		cJSON_AddStringToObject(o, "cpus", c);
	}
	add_u64(o, "output_files", l->output_files);
	add_unit(o, "output_files_size", l->output_files_bytes, ps_format_size);
}

static void add_seccomp(cJSON *root, const struct ps_policy *p)
{
	cJSON *o = cJSON_AddObjectToObject(root, "seccomp");
	const char *en = ps_errno_name(p->seccomp_errno);

	if (!o)
		return;
	cJSON_AddStringToObject(o, "action", ps_seccomp_action_name(p->seccomp_action));
	if (en)
		cJSON_AddStringToObject(o, "errno", en);
	else
		add_u64(o, "errno", (uint64_t)p->seccomp_errno);
	add_list(o, "groups", &p->syscall_groups);
	add_list(o, "allow", &p->syscalls_allow);
	cJSON_AddBoolToObject(o, "threads", p->threads);
	add_nullable(o, "profile", p->seccomp_profile_path);
}

/* The resolved policy in the input format (plus where it came from), so check-policy's
 * output shows exactly what a run gets and could be saved as a policy of its own. */
char *ps_policy_to_json(const struct ps_policy *p, bool pretty)
{
	cJSON *root = cJSON_CreateObject(), *o;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "name", p->name ? p->name : "");
	add_nullable(root, "path", p->path);
	add_nullable(root, "extends", p->extends);
	add_nullable(root, "description", p->description);
	add_limits(root, &p->limits);
	if ((o = cJSON_AddObjectToObject(root, "modules"))) {
		add_list(o, "lists", &p->module_lists);
		add_list(o, "allow", &p->modules_allow);
		add_list(o, "deny", &p->modules_deny);
		add_list(o, "paths", &p->python_paths);
		add_list(o, "internal", &p->modules_internal);
	}
	if ((o = cJSON_AddObjectToObject(root, "filesystem"))) {
		add_list(o, "read", &p->read_paths);
		add_list(o, "write", &p->write_paths);
	}
	cJSON_AddBoolToObject(root, "network", p->network);
	if ((o = cJSON_AddObjectToObject(root, "audit")))
		add_list(o, "allow", &p->audit_allow);
	add_seccomp(root, p);
	if ((o = cJSON_AddObjectToObject(root, "identity"))) {
		add_u64(o, "uid", p->uid);
		add_u64(o, "gid", p->gid);
		if (p->uid_per_process)
			cJSON_AddStringToObject(o, "uid_count", "per-process");
		else
			add_u64(o, "uid_count", p->uid_count);
	}
	if ((o = cJSON_AddObjectToObject(root, "cgroup")))
		add_nullable(o, "parent", p->cgroup_parent);
	if ((o = cJSON_AddObjectToObject(root, "layers")))
		for (int i = 0; i < PS_LAYER_COUNT; i++)
			cJSON_AddStringToObject(o, ps_layer_name((enum ps_layer)i),
						ps_layer_mode_name(p->layers[i]));
	return print(root, pretty);
}
