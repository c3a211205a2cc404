/* Policy loading: good fixtures resolve to the values they spell, bad ones fail with
 * "policy FILE: field X: reason", the real policies/ load and agree with the built-in
 * defaults, allowlists resolve, overrides tighten. Run from the repository root. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "policy/policy.h"
#include "sandbox/syscall_groups.h"
#include "util/util.h"

#define FIX "tests/fixtures/policies"
#define GOOD FIX "/good/"
#define BAD FIX "/bad/"

static char err[2048];

/* ---- bad fixtures: every one in bad/ is listed here ---- */

struct bad_case {
	const char *file;	/* in bad/ */
	const char *blamed;	/* the file the message names, if not this one */
	const char *want;	/* after "policy FILE: "; NULL: a helper that loads fine */
};

static const struct bad_case bad_cases[] = {
	{ "unknown_top", NULL, "field limitz: unknown key (known: extends, description, limits" },
	{ "unknown_nested", NULL, "field limits.wal: unknown key (known: wall, cpu, memory" },
	{ "unknown_layer", NULL, "field layers.selinux: unknown key (known: python, identity" },
	{ "section_type", NULL, "field limits: expected an object, got an array" },
	{ "size_type", NULL, "field limits.memory: expected a string with a unit (e.g. \"256M\"), "
			     "got a number" },
	{ "duration_type", NULL, "field limits.wall: expected a string with a unit (e.g. \"5s\")" },
	{ "count_type", NULL, "field limits.open_files: expected a whole number, got a string" },
	{ "count_fraction", NULL, "field limits.processes: must be a whole number" },
	{ "count_negative", NULL, "field identity.uid: must not be negative" },
	{ "count_too_big", NULL, "field limits.open_files: must be at most 1048576" },
	{ "count_huge", NULL, "field limits.processes: must be at most 4194304" },
	{ "uid_root", NULL, "field identity.uid: must be at least 1" },
	{ "uid_range", NULL, "field identity.uid_count: uid range 4294967290..4294967389 passes" },
	{ "bad_unit", NULL, "field limits.wall: bad unit 'x' in '5x'" },
	{ "bad_size_unit", NULL, "field limits.scratch: bad size '10 M' (no spaces" },
	{ "size_overflow", NULL, "field limits.memory: '99999999999T' is too large" },
	{ "zero_wall", NULL, "field limits.wall: must be at least 1ms" },
	{ "zero_memory", NULL, "field limits.memory: must be at least 1" },
	{ "zero_scratch", NULL, "field limits.scratch: must be at least 4K" },
	{ "uid_count_word", NULL, "field identity.uid_count: 'per-thread' is neither a number of "
				  "uids nor \"per-process\"" },
	{ "uid_per_process_high", NULL, "field identity.uid_count: \"per-process\" needs uid and "
					"gid + 4194304 below 2^31" },
	{ "wall_too_long", NULL, "field limits.wall: must be at most 24h" },
	{ "negative_cpu", NULL, "field limits.cpu: '-1s' is negative" },
	{ "bad_action", NULL, "field seccomp.action: 'trap' is not one of kill, kill-process, errno" },
	{ "bad_layer_mode", NULL, "field layers.landlock: 'maybe' is not one of required, "
				  "best-effort, off" },
	{ "bad_errno_name", NULL, "field seccomp.errno: unknown errno name 'EWHATEVER'" },
	{ "bad_errno_range", NULL, "field seccomp.errno: must be at most 4095" },
	{ "bad_errno_zero", NULL, "field seccomp.errno: must be at least 1" },
	{ "bad_module", NULL, "field modules.allow[1]: 'os path' is not a dotted module name" },
	{ "bad_module_dot", NULL, "field modules.deny[0]: 'xml.' is not a dotted module name" },
	{ "bad_list_name", NULL, "field modules.lists[0]: '../etc/passwd' is not a list name" },
	{ "list_item_type", NULL, "field modules.deny[1]: expected a string, got a number" },
	{ "list_type", NULL, "field filesystem.read: expected an array of strings, got a string" },
	{ "empty_item", NULL, "field filesystem.read[0]: '' is empty" },
	{ "relative_path", NULL, "field filesystem.write[0]: 'tmp/out' is not an absolute path" },
	{ "group_no_at", NULL, "field seccomp.groups[0]: 'basic-io' is not a syscall group" },
	{ "bad_syscall", NULL, "field seccomp.allow[0]: 'getpid; reboot' is not a syscall name" },
	{ "threads_type", NULL, "field seccomp.threads: expected true or false, got a string" },
	{ "network_true", NULL, "field network: network access is not supported" },
	{ "network_type", NULL, "field network: expected false, got a string" },
	{ "description_type", NULL, "field description: expected a string or null, got an array" },
	{ "cgroup_relative", NULL, "field cgroup.parent: 'pysnip' is not an absolute path" },
	{ "cgroup_required", NULL, "field layers.cgroup: 'required' needs cgroup.parent" },
	{ "threads_one_process", NULL, "field seccomp.threads: threads need limits.processes of "
				       "at least 2" },
	{ "top_array", NULL, "the top level must be a JSON object, not an array" },
	{ "top_string", NULL, "the top level must be a JSON object, not a string" },
	{ "chain_child", NULL, "field extends: parent 'chain_mid' itself extends 'chain_root' "
			       "(extends chain deeper than one level)" },
	{ "chain_mid", NULL, NULL },
	{ "chain_root", NULL, NULL },
	{ "self_extend", NULL, "field extends: a policy cannot extend itself" },
	{ "missing_parent", NULL, "field extends: parent policy 'no_such_parent' not found in "
				  FIX "/bad or policies" },
	{ "extends_path", NULL, "field extends: '../good/full' is not a policy name" },
	{ "extends_type", NULL, "field extends: expected a policy name, got a number" },
	{ "extends_null", NULL, "field extends: expected a policy name, got null" },
	{ "parent_bad", "parent_broken", "field limits.cpu: 'fast' is not a number" },
	{ "parent_broken", NULL, "field limits.cpu: 'fast' is not a number" },
	{ "child_breaks_parent", NULL, "field limits.memory: 'lots' is not a number" },
	{ "duplicate_key", NULL, "field limits.wall: duplicate key" },
	{ "bad_json", NULL, "invalid JSON near line 4" },
	{ "trailing_garbage", NULL, "invalid JSON near line 2" },
	{ "truncated", NULL, "invalid JSON near line 1" },
	{ "comment", NULL, "invalid JSON near line 1, column 1" },
	{ "non_utf8", NULL, "not valid UTF-8 at line 2, column 22" },
	{ "overlong_utf8", NULL, "not valid UTF-8 at line 1" },
	{ "surrogate_utf8", NULL, "not valid UTF-8 at line 1" },
	{ "beyond_max_utf8", NULL, "not valid UTF-8 at line 1, column 18" },
	{ "cut_utf8", NULL, "not valid UTF-8 at line 2, column 1 (byte 3)" },
	{ "nul_byte", NULL, "NUL byte at line 1, column 19" },
	{ "nul_escape", NULL, "\\u0000 in a string at line 1" },
	{ "empty", NULL, "empty file" },
	{ "whitespace", NULL, "empty file" },
};

static const struct bad_case *find_bad(const char *stem)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(bad_cases); i++)
		if (strcmp(bad_cases[i].file, stem) == 0)
			return &bad_cases[i];
	return NULL;
}

static void expect_fail(const char *arg, const char *blamed, const char *want)
{
	struct ps_policy p;
	char prefix[512];

	memset(&p, 0x5a, sizeof(p));
	err[0] = '\0';
	CHECK(ps_policy_load(arg, &p, err, sizeof(err)) == -1);
	snprintf(prefix, sizeof(prefix), "policy %s: ", blamed);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fprintf(stderr, "%s: message does not start with \"%s\"\n", arg, prefix);
	CHECK(strncmp(err, prefix, strlen(prefix)) == 0);
	CHECK_CONTAINS(err, want);
	CHECK(p.name == NULL && p.path == NULL && p.module_lists.n == 0);	/* freed */
}

static void test_bad_fixtures(void)
{
	char path[512], blamed[512];

	for (size_t i = 0; i < PS_ARRAY_LEN(bad_cases); i++) {
		const struct bad_case *b = &bad_cases[i];
		struct ps_policy p;

		snprintf(path, sizeof(path), BAD "%s.json", b->file);
		if (!b->want) {
			CHECK(ps_policy_load(path, &p, err, sizeof(err)) == 0);
			ps_policy_free(&p);
			continue;
		}
		snprintf(blamed, sizeof(blamed), BAD "%s.json", b->blamed ? b->blamed : b->file);
		expect_fail(path, blamed, b->want);
	}
}

/* A fixture nobody tests is a fixture that proves nothing. */
static void test_every_bad_fixture_listed(void)
{
	DIR *d = opendir(BAD);
	struct dirent *de;
	size_t seen = 0;

	CHECK(d != NULL);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		de->d_name[n - 5] = '\0';
		if (!find_bad(de->d_name))
			fprintf(stderr, "bad/%s.json has no entry in bad_cases\n", de->d_name);
		CHECK(find_bad(de->d_name) != NULL);
		seen++;
	}
	if (d)
		closedir(d);
	CHECK(seen == PS_ARRAY_LEN(bad_cases));
}

/* Whole-file problems that are better made on the fly than committed. */
static void test_generated_files(void)
{
	char dir[] = "/tmp/pysnip-test-policy-XXXXXX", path[256];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/big.json", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("{\"description\": \"", f);
		for (int i = 0; i < 1024 * 1024; i++)
			fputc('x', f);
		fputs("\"}\n", f);
		fclose(f);
	}
	expect_fail(path, path, "file too large (1048596 bytes, the limit is 1048576)");

	/* Just under the limit still loads. */
	f = fopen(path, "w");
	if (f) {
		fputs("{\"description\": \"", f);
		for (int i = 0; i < 1024 * 1024 - 20; i++)
			fputc('x', f);
		fputs("\"}\n", f);
		fclose(f);
	}
	struct ps_policy p;
	CHECK(ps_policy_load(path, &p, err, sizeof(err)) == 0);
	CHECK(p.description && strlen(p.description) == 1024 * 1024 - 20);
	ps_policy_free(&p);
	unlink(path);

	snprintf(path, sizeof(path), "%s/dir.json", dir);
	CHECK(mkdir(path, 0700) == 0);
	expect_fail(path, path, "not a regular file");
	rmdir(path);

	snprintf(path, sizeof(path), "%s/unreadable.json", dir);
	expect_fail(path, path, "cannot open: No such file or directory");
	rmdir(dir);
}

/* ---- good fixtures ---- */

static int load(const char *arg, struct ps_policy *p)
{
	err[0] = '\0';
	if (ps_policy_load(arg, p, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "load %s: %s\n", arg, err);
	return -1;
}

static void check_list(const struct ps_strlist *l, const char *const *want, size_t n)
{
	CHECK(l->n == n);
	for (size_t i = 0; i < n && i < l->n; i++)
		CHECK_STR(l->items[i], want[i]);
}

#define LIST(l, ...)                                                                     \
	do {                                                                             \
		static const char *const w_[] = { __VA_ARGS__ };                         \
		check_list(l, w_, PS_ARRAY_LEN(w_));                                     \
	} while (0)

static void check_default_values(const struct ps_policy *p)
{
	CHECK(p->limits.wall_ms == 5000);
	CHECK(p->limits.cpu_ms == 2000);
	CHECK(p->limits.memory_bytes == 256ULL << 20);
	CHECK(p->limits.output_bytes == 1ULL << 20);
	CHECK(p->limits.file_size_bytes == 16ULL << 20);
	CHECK(p->limits.open_files == 64);
	CHECK(p->limits.processes == 1);
	CHECK(p->limits.scratch_bytes == 64ULL << 20);
	LIST(&p->module_lists, "default");
	CHECK(p->modules_allow.n == 0 && p->modules_deny.n == 0 && p->python_paths.n == 0);
	CHECK(p->read_paths.n == 0 && p->write_paths.n == 0 && p->audit_allow.n == 0);
	CHECK(!p->network);
	CHECK(p->seccomp_action == PS_SECCOMP_KILL);
	CHECK(p->seccomp_errno == EPERM);
	CHECK(!p->threads);
	CHECK(p->syscalls_allow.n == 0);
	CHECK(ps_strlist_has(&p->syscall_groups, "@python-runtime"));
	CHECK(!ps_strlist_has(&p->syscall_groups, "@threads"));
	/* a uid and gid of its own for every worker, from a range no account uses */
	CHECK(p->uid == 1879048192 && p->gid == 1879048192 && p->uid_per_process &&
	      p->uid_count == PS_UID_PER_PROCESS_SPAN);
	CHECK(p->cgroup_parent == NULL);
	CHECK(p->layers[PS_LAYER_PYTHON] == PS_LAYER_REQUIRED);
	CHECK(p->layers[PS_LAYER_IDENTITY] == PS_LAYER_REQUIRED);
	CHECK(p->layers[PS_LAYER_LANDLOCK] == PS_LAYER_REQUIRED);
	CHECK(p->layers[PS_LAYER_SECCOMP] == PS_LAYER_REQUIRED);
	CHECK(p->layers[PS_LAYER_NAMESPACES] == PS_LAYER_BEST_EFFORT);
	CHECK(p->layers[PS_LAYER_CGROUP] == PS_LAYER_OFF);
}

static void check_full_values(const struct ps_policy *p)
{
	CHECK(p->limits.cpu_ms == 500);
	CHECK(p->limits.memory_bytes == 64ULL << 20);
	CHECK(p->limits.output_bytes == 10 << 10);
	CHECK(p->limits.file_size_bytes == 0);
	CHECK(p->limits.open_files == 10);
	CHECK(p->limits.processes == 4);
	CHECK(p->limits.scratch_bytes == 1 << 20);
	LIST(&p->modules_allow, "json", "xml.dom");
	LIST(&p->modules_deny, "xml");
	LIST(&p->python_paths, "/opt/pylib");
	LIST(&p->read_paths, "/data", "/srv/shared");
	LIST(&p->write_paths, "/tmp/out");
	LIST(&p->audit_allow, "os.listdir");
	CHECK(p->seccomp_errno == EACCES);
	LIST(&p->syscall_groups, "@basic-io");
	LIST(&p->syscalls_allow, "getpid");
	CHECK(p->threads);
	CHECK(p->uid == 1000 && p->gid == 1001 && p->uid_count == 8);
	CHECK_STR(p->cgroup_parent, "/sys/fs/cgroup/pysnip");
	CHECK(p->layers[PS_LAYER_PYTHON] == PS_LAYER_OFF);
	CHECK(p->layers[PS_LAYER_IDENTITY] == PS_LAYER_BEST_EFFORT);
	CHECK(p->layers[PS_LAYER_LANDLOCK] == PS_LAYER_BEST_EFFORT);
	CHECK(p->layers[PS_LAYER_SECCOMP] == PS_LAYER_REQUIRED);
	CHECK(p->layers[PS_LAYER_NAMESPACES] == PS_LAYER_OFF);
	CHECK(p->layers[PS_LAYER_CGROUP] == PS_LAYER_REQUIRED);
	CHECK_STR(p->description, "every key set to a value that is not the default");
}

static void test_good_fixtures(void)
{
	struct ps_policy p;

	if (load(GOOD "minimal.json", &p) == 0) {
		CHECK_STR(p.name, "minimal");
		CHECK_STR(p.path, GOOD "minimal.json");
		CHECK(p.extends == NULL && p.description == NULL);
		check_default_values(&p);
		ps_policy_free(&p);
	}
	if (load(GOOD "full.json", &p) == 0) {
		CHECK(p.limits.wall_ms == 1500);
		CHECK(p.seccomp_action == PS_SECCOMP_ERRNO);
		LIST(&p.module_lists, "fx_basic");
		check_full_values(&p);
		ps_policy_free(&p);
	}
	/* A child overrides key by key; lists it names replace the parent's. */
	if (load(GOOD "child.json", &p) == 0) {
		CHECK_STR(p.name, "child");
		CHECK_STR(p.extends, "full");
		CHECK(p.limits.wall_ms == 3000);
		CHECK(p.seccomp_action == PS_SECCOMP_KILL_PROCESS);
		LIST(&p.module_lists, "fx_extra");
		check_full_values(&p);
		ps_policy_free(&p);
	}
	/* Not next to the child: found in the policy directory. */
	if (load(GOOD "child_of_default.json", &p) == 0) {
		CHECK_STR(p.extends, "default");
		CHECK(p.limits.memory_bytes == 512ULL << 20);
		CHECK(p.limits.wall_ms == 5000);
		LIST(&p.modules_allow, "zlib");
		LIST(&p.module_lists, "default");
		CHECK_STR(p.description, "a site policy");
		ps_policy_free(&p);
	}
	/* Valid UTF-8 of every length is fine (the positive control for the bad bytes). */
	if (load(GOOD "unicode.json", &p) == 0) {
		CHECK_STR(p.description, "café — ünïcödé 日本 🐍 é 🐍");
		ps_policy_free(&p);
	}
	/* cJSON skips a UTF-8 byte order mark; so do we. */
	if (load(GOOD "bom.json", &p) == 0)
		ps_policy_free(&p);
	if (load(GOOD "errno_number.json", &p) == 0) {
		CHECK(p.seccomp_errno == ENOSYS);
		ps_policy_free(&p);
	}
	if (load(GOOD "units.json", &p) == 0) {
		CHECK(p.limits.wall_ms == 2000);	/* bare number: seconds */
		CHECK(p.limits.cpu_ms == 250);
		CHECK(p.limits.memory_bytes == 1ULL << 30);	/* bare number: bytes */
		CHECK(p.limits.output_bytes == 0);
		CHECK(p.limits.scratch_bytes == 3ULL << 29);
		ps_policy_free(&p);
	}
}

/* ---- names, directories, the real policies ---- */

static void test_names_and_dirs(void)
{
	struct ps_policy p;

	CHECK_STR(ps_policy_dir(), "policies");
	CHECK_STR(ps_allow_dir(), "tests/fixtures/allow");
	/* A name is looked up in the policy directory; a path is taken as it is. */
	expect_fail("nope", "nope", "not found in policies (known: default, notebook, scientific, strict)");
	expect_fail("no way", "no way", "not found in policies (known: default, notebook, scientific, strict)");
	expect_fail("strict.json", "strict.json", "cannot open: No such file or directory");
	if (load("./policies/strict.json", &p) == 0) {
		CHECK_STR(p.name, "strict");
		CHECK_STR(p.path, "./policies/strict.json");
		ps_policy_free(&p);
	}
	setenv("PYSNIP_POLICY_DIR", FIX "/good", 1);
	CHECK_STR(ps_policy_dir(), FIX "/good");
	if (load("full", &p) == 0) {
		CHECK_STR(p.path, FIX "/good/full.json");
		check_full_values(&p);
		ps_policy_free(&p);
	}
	expect_fail("strict", "strict", "not found in " FIX "/good (known: bom, child, "
			"child_of_default, errno_number, errno_unnamed, full, minimal, unicode, units)");
	setenv("PYSNIP_POLICY_DIR", "policies", 1);

	for (int i = 0; i < PS_LAYER_COUNT; i++)
		CHECK(ps_layer_from_name(ps_layer_name((enum ps_layer)i)) == i);
	CHECK(ps_layer_from_name("selinux") == -1);
	CHECK_STR(ps_seccomp_action_name(PS_SECCOMP_KILL_PROCESS), "kill-process");
	CHECK_STR(ps_layer_mode_name(PS_LAYER_BEST_EFFORT), "best-effort");
	CHECK_STR(ps_errno_name(EPERM), "EPERM");
	CHECK(ps_errno_name(4000) == NULL);
	CHECK(ps_module_name_valid("os.path") && ps_module_name_valid("_abc.d2"));
	CHECK(!ps_module_name_valid("2to3") && !ps_module_name_valid("a..b") &&
	      !ps_module_name_valid(".a") && !ps_module_name_valid("") &&
	      !ps_module_name_valid("a-b") && !ps_module_name_valid("caf\xc3\xa9"));
}

static void test_real_policies(void)
{
	struct ps_policy p, builtin;
	DIR *d = opendir("policies");
	struct dirent *de;
	char path[512];
	int n = 0;

	CHECK(d != NULL);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "policies/%s", de->d_name);
		CHECK(load(path, &p) == 0);
		/* Every group a shipped policy names exists in the seccomp table. */
		for (size_t i = 0; i < p.syscall_groups.n; i++) {
			if (!ps_syscall_group_find(p.syscall_groups.items[i]))
				fprintf(stderr, "%s: unknown group %s\n", path,
					p.syscall_groups.items[i]);
			CHECK(ps_syscall_group_find(p.syscall_groups.items[i]) != NULL);
		}
		ps_policy_free(&p);
		n++;
	}
	if (d)
		closedir(d);
	CHECK(n >= 3);

	if (load("default", &p) == 0) {
		check_default_values(&p);
		/* The built-in defaults (an empty policy) are exactly policies/default.json. */
		if (load(GOOD "minimal.json", &builtin) == 0) {
			CHECK(memcmp(&p.limits, &builtin.limits, sizeof(p.limits)) == 0);
			CHECK(p.syscall_groups.n == builtin.syscall_groups.n);
			for (size_t i = 0; i < p.syscall_groups.n && i < builtin.syscall_groups.n; i++)
				CHECK_STR(p.syscall_groups.items[i], builtin.syscall_groups.items[i]);
			CHECK(memcmp(p.layers, builtin.layers, sizeof(p.layers)) == 0);
			ps_policy_free(&builtin);
		}
		ps_policy_free(&p);
	}
	if (load("strict", &p) == 0) {
		CHECK(p.limits.wall_ms == 2000 && p.limits.cpu_ms == 1000);
		CHECK(p.limits.memory_bytes == 128ULL << 20);
		CHECK(p.limits.output_bytes == 64 << 10);
		CHECK(p.limits.open_files == 32);
		CHECK(p.limits.scratch_bytes == 8ULL << 20);
		CHECK(p.limits.file_size_bytes == 16ULL << 20);	/* inherited */
		CHECK(p.limits.processes == 1 && !p.threads);
		LIST(&p.module_lists, "strict");
		ps_policy_free(&p);
	}
	if (load("notebook", &p) == 0) {
		CHECK(p.limits.wall_ms == 30000 && p.limits.cpu_ms == 20000);
		CHECK(p.limits.memory_bytes == 1ULL << 30);
		CHECK(p.limits.output_bytes == 8ULL << 20);
		CHECK(p.limits.processes == 16 && p.threads);
		CHECK(ps_strlist_has(&p.syscall_groups, "@threads"));
		LIST(&p.module_lists, "default", "notebook");
		ps_policy_free(&p);
	}
}

/* With the real stdlib-allow/ (another engineer's files), each shipped policy's lists
 * must resolve. */
static void test_real_allowlists(void)
{
	static const char *const names[] = { "default", "strict", "notebook" };
	struct stat st;

	if (stat("stdlib-allow/default.txt", &st) != 0) {
		printf("SKIP test_real_allowlists: stdlib-allow/default.txt not written yet\n");
		return;
	}
	setenv("PYSNIP_ALLOW_DIR", "stdlib-allow", 1);
	for (size_t i = 0; i < PS_ARRAY_LEN(names); i++) {
		struct ps_policy p;
		struct ps_strlist mods = { 0 };

		if (load(names[i], &p) < 0)
			continue;
		err[0] = '\0';
		CHECK(ps_policy_modules(&p, &mods, err, sizeof(err)) == 0);
		if (err[0])
			fprintf(stderr, "%s: %s\n", names[i], err);
		CHECK(mods.n > 0);
		CHECK(!ps_strlist_has(&mods, "ctypes") && !ps_strlist_has(&mods, "socket"));
		ps_strlist_free(&mods);
		ps_policy_free(&p);
	}
	setenv("PYSNIP_ALLOW_DIR", "tests/fixtures/allow", 1);
}

/* ---- the import allowlist ---- */

static void test_modules(void)
{
	struct ps_policy p;
	struct ps_strlist mods = { 0 };

	/* Lists merged, allow added, deny removing the package and its submodules,
	 * comments and blanks ignored, sorted and unique. */
	if (load(FIX "/modules/lists.json", &p) == 0) {
		CHECK(ps_policy_modules(&p, &mods, err, sizeof(err)) == 0);
		LIST(&mods, "collections.abc", "datetime", "json", "math", "re", "string", "zlib");
		ps_strlist_free(&mods);
		ps_policy_free(&p);
	}
	if (load(FIX "/modules/no_lists.json", &p) == 0) {
		CHECK(ps_policy_modules(&p, &mods, err, sizeof(err)) == 0);
		LIST(&mods, "math");
		ps_strlist_free(&mods);
		ps_policy_free(&p);
	}
	if (load(FIX "/modules/missing_list.json", &p) == 0) {
		mods.n = 99;
		CHECK(ps_policy_modules(&p, &mods, err, sizeof(err)) == -1);
		CHECK_STR(err, "policy " FIX "/modules/missing_list.json: field modules.lists[1]: "
			       "tests/fixtures/allow/fx_nope.txt: No such file or directory");
		ps_policy_free(&p);
	}
	if (load(FIX "/modules/bad_line.json", &p) == 0) {
		CHECK(ps_policy_modules(&p, &mods, err, sizeof(err)) == -1);
		CHECK_STR(err, "policy " FIX "/modules/bad_line.json: field modules.lists[0]: "
			       "tests/fixtures/allow/fx_bad.txt:4: 'bad name' is not a module name");
		ps_policy_free(&p);
	}
}

/* ---- overrides ---- */

static void test_overrides(void)
{
	struct ps_policy p;

	if (load("default", &p) < 0)
		return;
	CHECK(ps_policy_override(&p, "wall", "1s", true, err, sizeof(err)) == 0);
	CHECK(p.limits.wall_ms == 1000);
	CHECK(ps_policy_override(&p, "wall", "10s", true, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.wall: 10s is looser than the policy's 1s");
	CHECK(p.limits.wall_ms == 1000);
	CHECK(ps_policy_override(&p, "wall", "10s", false, err, sizeof(err)) == 0);
	CHECK(p.limits.wall_ms == 10000);
	CHECK(ps_policy_override(&p, "cpu", "1500ms", true, err, sizeof(err)) == 0);
	CHECK(p.limits.cpu_ms == 1500);
	CHECK(ps_policy_override(&p, "limits.memory", "64M", true, err, sizeof(err)) == 0);
	CHECK(p.limits.memory_bytes == 64ULL << 20);
	CHECK(ps_policy_override(&p, "memory", "1G", true, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.memory: 1G is looser than the policy's 64M");
	CHECK(ps_policy_override(&p, "output", "0", true, err, sizeof(err)) == 0);
	CHECK(p.limits.output_bytes == 0);
	CHECK(ps_policy_override(&p, "output", "5x", false, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.output: bad unit 'x' in '5x' (e.g. 64K, 256M, 2G)");
	CHECK(ps_policy_override(&p, "wall", "0", false, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.wall: must be at least 1ms");
	CHECK(ps_policy_override(&p, "wall", "", false, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.wall: empty duration");
	CHECK(ps_policy_override(&p, "cpu", "48h", false, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.cpu: must be at most 24h");
	CHECK(ps_policy_override(&p, "open_files", "10", false, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "limits.open_files: not a limit that can be overridden");
	CHECK(ps_policy_override(&p, "bogus", "1s", false, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "limits.bogus: not a limit that can be overridden");
	/* 0 is the tightest value or refused, never "no limit": a tmpfs cannot be 0 bytes */
	CHECK(ps_policy_override(&p, "scratch", "0", true, err, sizeof(err)) == -1);
	CHECK_STR(err, "limits.scratch: must be at least 4K");
	CHECK(ps_policy_override(&p, "scratch", "0", false, err, sizeof(err)) == -1);
	CHECK(ps_policy_override(&p, "file_size", "0", true, err, sizeof(err)) == 0);
	CHECK(p.limits.file_size_bytes == 0);
	ps_policy_free(&p);
}

/* ---- printing ---- */

/* The verdict's "limits", printed as the verdict prints it. */
static char *limits_json(const struct ps_limits *l)
{
	cJSON *o = ps_limits_to_cjson(l);
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	return s;
}

static void test_limits_json(void)
{
	struct ps_policy p;
	char *j;

	if (load("default", &p) < 0)
		return;
	j = limits_json(&p.limits);
	CHECK_STR(j, "{\"wall_ms\":5000,\"cpu_ms\":2000,\"memory_bytes\":268435456,"
		     "\"output_bytes\":1048576,\"file_size_bytes\":16777216,\"open_files\":64,"
		     "\"processes\":1,\"scratch_bytes\":67108864,\"output_files\":64,"
		     "\"output_files_bytes\":16777216}");
	free(j);
	p.limits.memory_bytes = UINT64_MAX;	/* 64-bit values print exactly */
	j = limits_json(&p.limits);
	CHECK_CONTAINS(j, "\"memory_bytes\":18446744073709551615,");
	free(j);
	ps_policy_free(&p);
}

/* check-policy's output, minus where it came from, is itself a policy that loads to the
 * same thing: nothing is lost or reworded in printing. */
static void round_trip(const char *arg)
{
	struct ps_policy p, q;
	char *a, *b, *body;
	char path[] = "/tmp/pysnip-test-roundtrip-XXXXXX.json";
	cJSON *o;
	int fd;

	if (load(arg, &p) < 0)
		return;
	a = ps_policy_to_json(&p, true);
	o = cJSON_Parse(a);
	CHECK(o != NULL);
	cJSON_DeleteItemFromObject(o, "name");
	cJSON_DeleteItemFromObject(o, "path");
	cJSON_DeleteItemFromObject(o, "extends");
	body = cJSON_Print(o);
	fd = mkstemps(path, 5);
	CHECK(fd >= 0);
	CHECK(ps_write_all(fd, body, strlen(body)) == 0);
	close(fd);
	if (load(path, &q) == 0) {
		free(q.name);
		free(q.path);
		q.name = strdup(p.name);
		q.path = strdup(p.path);
		q.extends = p.extends ? strdup(p.extends) : NULL;
		b = ps_policy_to_json(&q, true);
		CHECK_STR(b, a);
		free(b);
		ps_policy_free(&q);
	}
	unlink(path);
	free(body);
	cJSON_Delete(o);
	free(a);
	ps_policy_free(&p);
}

static void test_to_json(void)
{
	struct ps_policy p;
	cJSON *o;
	char *j;

	round_trip("default");
	round_trip("strict");
	round_trip("notebook");
	round_trip(GOOD "full.json");
	round_trip(GOOD "child.json");
	round_trip(GOOD "errno_unnamed.json");
	round_trip(GOOD "units.json");

	if (load(GOOD "child.json", &p) < 0)
		return;
	j = ps_policy_to_json(&p, false);
	o = cJSON_Parse(j);
	CHECK(o != NULL);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")), "child");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "extends")), "full");
	CHECK_CONTAINS(j, "\"limits\":{\"wall\":\"3s\",\"cpu\":\"500ms\",\"memory\":\"64M\","
			  "\"output\":\"10K\",\"file_size\":\"0\",\"open_files\":10,\"processes\":4,"
			  "\"scratch\":\"1M\",\"output_files\":64,\"output_files_size\":\"16M\"}");
	CHECK_CONTAINS(j, "\"action\":\"kill-process\",\"errno\":\"EACCES\"");
	CHECK_CONTAINS(j, "\"cgroup\":{\"parent\":\"/sys/fs/cgroup/pysnip\"}");
	CHECK_CONTAINS(j, "\"network\":false");
	cJSON_Delete(o);
	free(j);
	ps_policy_free(&p);

	if (load(GOOD "errno_unnamed.json", &p) == 0) {
		j = ps_policy_to_json(&p, false);
		CHECK_CONTAINS(j, "\"errno\":4000");
		free(j);
		ps_policy_free(&p);
	}
}

int main(void)
{
	setenv("PYSNIP_POLICY_DIR", "policies", 1);
	setenv("PYSNIP_ALLOW_DIR", "tests/fixtures/allow", 1);
	test_bad_fixtures();
	test_every_bad_fixture_listed();
	test_generated_files();
	test_good_fixtures();
	test_names_and_dirs();
	test_real_policies();
	test_real_allowlists();
	test_modules();
	test_overrides();
	test_limits_json();
	test_to_json();
	return ps_test_done("test_policy");
}
