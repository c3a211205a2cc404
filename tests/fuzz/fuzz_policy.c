/* Policy files (host/policy/): any file either loads or fails with "policy FILE: ...", and a
 * policy that loads prints (check-policy's JSON) as a policy of its own that loads back to the
 * same thing: the printer and the parser agree on every field. Its module lists resolve or
 * fail with a message.
 *
 * The input is written to a file in a private directory and loaded through ps_policy_load,
 * the path every caller takes (size and UTF-8 checks, one level of extends). Beside it are the
 * test fixtures (the JSON files of tests/fixtures/policies/{good,bad,layers,modules}, so seeds that extend a
 * fixture find it) and an allow directory with stdlib-allow/ and the fixture lists; the
 * repository's policies/ is found next to the binary's directory, as pysnip finds it. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "policy/policy.h"
#include "util/util.h"

static char dir[PATH_MAX], input[PATH_MAX + 16], again[PATH_MAX + 16];

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FUZZ_CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	FUZZ_CHECK(ps_write_all(fd, buf, len) == 0, "%s: write failed", path);
	close(fd);
}

/* Every FROM/NAME.EXT into TO/. */
static void copy_dir(const char *from, const char *to, const char *ext)
{
	DIR *d = opendir(from);
	struct dirent *de;
	char src[PATH_MAX + 300], dst[PATH_MAX + 300];

	if (!d) {
		fprintf(stderr, "fuzz_policy: cannot open %s: %s\n", from, strerror(errno));
		exit(1);
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), e = strlen(ext);
		char *buf;
		size_t len;

		if (n <= e || strcmp(de->d_name + n - e, ext))
			continue;
		snprintf(src, sizeof(src), "%s/%s", from, de->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", to, de->d_name);
		if (ps_read_file(src, &buf, &len) == 0) {
			write_file(dst, buf, len);
			free(buf);
		}
	}
	closedir(d);
}

static void cleanup(void)
{
	ps_rmtree(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const fixtures[] = { "good", "bad", "layers", "modules" };
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char root[PATH_MAX], path[PATH_MAX * 2], allow[PATH_MAX + 16];

	snprintf(root, sizeof(root), "%s/..", ps_policy_dir());	/* the repository */
	snprintf(path, sizeof(path), "%s/default.json", ps_policy_dir());
	if (access(path, R_OK) < 0) {
		fprintf(stderr, "fuzz_policy: no %s (run from a checkout's build-fuzz/)\n", path);
		exit(1);
	}
	snprintf(dir, sizeof(dir), "%s/pysnip-fuzz-policy-XXXXXX", base);
	FUZZ_CHECK(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	for (size_t i = 0; i < PS_ARRAY_LEN(fixtures); i++) {
		snprintf(path, sizeof(path), "%s/tests/fixtures/policies/%s", root, fixtures[i]);
		copy_dir(path, dir, ".json");
	}
	snprintf(allow, sizeof(allow), "%s/allow", dir);
	FUZZ_CHECK(mkdir(allow, 0700) == 0, "mkdir %s: %s", allow, strerror(errno));
	snprintf(path, sizeof(path), "%s/stdlib-allow", root);
	copy_dir(path, allow, ".txt");
	snprintf(path, sizeof(path), "%s/tests/fixtures/allow", root);
	copy_dir(path, allow, ".txt");
	setenv("PYSNIP_ALLOW_DIR", allow, 1);
	/* Not .json, so no input can name them in "extends" (a parent must not be the last
	 * input's leftovers: a crash must reproduce from its input alone). */
	snprintf(input, sizeof(input), "%s/input.json", dir);
	snprintf(again, sizeof(again), "%s/printed.json", dir);
	return 0;
}

/* check-policy's output, less what says where it came from (not keys of the input format). */
static char *printed_as_input(const struct ps_policy *p)
{
	char *text = ps_policy_to_json(p, false), *out;
	cJSON *root;

	FUZZ_CHECK(text, "ps_policy_to_json returned NULL");
	root = cJSON_Parse(text);
	FUZZ_CHECK(cJSON_IsObject(root), "check-policy printed no JSON object: %s", text);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "path");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "extends");
	out = cJSON_PrintUnformatted(root);
	FUZZ_CHECK(out, "out of memory");
	cJSON_Delete(root);
	free(text);
	return out;
}

static void check_loaded(struct ps_policy *p)
{
	char err[4096], *first = printed_as_input(p), *second;
	struct ps_policy q;
	struct ps_strlist mods = { 0 };

	write_file(again, first, strlen(first));
	FUZZ_CHECK(ps_policy_load(again, &q, err, sizeof(err)) == 0,
		   "the printed policy does not load back: %s\nprinted: %s", err, first);
	unlink(again);
	second = printed_as_input(&q);
	FUZZ_CHECK(!strcmp(first, second), "printed, loaded, printed again differs:\n%s\n%s",
		   first, second);
	free(first);
	free(second);
	ps_policy_free(&q);

	err[0] = '\0';
	if (ps_policy_modules(p, &mods, err, sizeof(err)) < 0)
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)), "module lists failed without a message");
	else
		for (size_t i = 0; i < mods.n; i++)
			FUZZ_CHECK(ps_module_name_valid(mods.items[i]), "module '%s' in the list",
				   mods.items[i]);
	ps_strlist_free(&mods);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_policy p;
	char err[4096];

	write_file(input, data, size);
	memset(err, 0, sizeof(err));
	if (ps_policy_load(input, &p, err, sizeof(err)) < 0) {
		FUZZ_CHECK(fuzz_msg_ok(err, sizeof(err)) && !strncmp(err, "policy ", 7),
			   "a failure without a 'policy FILE: ...' message: '%s'", err);
		return 0;
	}
	check_loaded(&p);
	ps_policy_free(&p);
	return 0;
}
