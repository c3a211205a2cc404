/* Landlock: the file system and TCP as the worker may see them.
 *
 * Read-only: the paths the worker passes (stdlib, lib-dynload, the policy's read paths)
 * and a few the runtime needs (below). Read-write: the run's scratch directory and the
 * policy's write paths. Nothing else, not even for listing. TCP bind and connect are
 * handled with no rule (all denied) from ABI 4; abstract unix sockets and signals are
 * scoped to the sandbox from ABI 6. The ABI is negotiated down to the kernel's.
 *
 * Prepared in the parent: ABI probe, access masks, the paths that exist, each opened O_PATH
 * once (a zygote then spares every worker a dozen path walks; the fds sit high, out of the
 * worker's stdio and channel numbers, and its fd phase closes them). Applied in the worker:
 * it opens scratch itself, after its tmpfs is mounted (a rule on the directory under a
 * mount would not cover the mount), adds the rules and restricts itself. Rules belong to
 * inodes, so a descriptor opened in the parent's mount namespace serves the worker's. */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"
#include "util/util.h"

/* Newer than Debian 12's linux-libc-dev (6.1): define what we use. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define PS_LL_NET_BIND_TCP (1ULL << 0)
#define PS_LL_NET_CONNECT_TCP (1ULL << 1)
#define PS_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define PS_LL_SCOPE_SIGNAL (1ULL << 1)

/* The ABI 6 layout of struct landlock_ruleset_attr; the kernel takes its size. */
struct ps_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* Files' rights (a rule on a non-directory may hold only these). */
#define FS_FILE_RIGHTS (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
			LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
			LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* Scratch: everything but executing, device nodes and sockets. */
#define FS_WRITE (FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
		  LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR | \
		  LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SYM | \
		  LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_REFER | \
		  LANDLOCK_ACCESS_FS_TRUNCATE)

/* What the runtime reaches by itself after the worker starts. None holds a secret. */
static const struct {
	const char *path;
	uint64_t access;
	const char *why;
} runtime_paths[] = {
	{ "/usr/lib/x86_64-linux-gnu", FS_READ, "libraries of lazily imported extension modules" },
	{ "/etc/ld.so.cache", FS_READ, "the dynamic loader's index, for those libraries" },
	{ "/etc/localtime", FS_READ, "time.localtime()" },
	{ "/usr/share/zoneinfo", FS_READ, "zoneinfo" },
	{ "/dev/urandom", FS_READ, "random fallbacks" },
	{ "/dev/random", FS_READ, "random fallbacks" },
	{ "/dev/null", FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE,
	  "os.devnull" },
	{ "/dev/zero", FS_READ, "reading zeros" },
};

struct ll_rule {
	char *path;
	int fd;			/* O_PATH, opened by the parent; -1: the worker opens path */
	uint64_t access;
};

/* Where the parent's O_PATH descriptors go: above every number a worker uses itself (0-4
 * for stdio and its channels, 16 and up for a moment in its stdio phase, 63 for its
 * report's private copy). Where the parent's RLIMIT_NOFILE is lower, the worker opens the
 * path itself, as for scratch. */
#define RULE_FD_MIN 100

struct ps_landlock {
	int abi;
	struct ps_ll_ruleset_attr attr;
	size_t attr_size;
	uint64_t write_access;	/* FS_WRITE masked to the ABI, for scratch */
	size_t n;
	struct ll_rule rules[];
};

int ps_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

/* Every right each ABI knows: handled rights without a rule are denied. */
static void ruleset_for_abi(int abi, struct ps_landlock *ll)
{
	uint64_t fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;	/* ABI 1: bits 0..12 */

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	memset(&ll->attr, 0, sizeof(ll->attr));
	ll->attr.handled_access_fs = fs;
	ll->attr_size = offsetof(struct ps_ll_ruleset_attr, handled_access_net);
	if (abi >= 4) {
		ll->attr.handled_access_net = PS_LL_NET_BIND_TCP | PS_LL_NET_CONNECT_TCP;
		ll->attr_size = offsetof(struct ps_ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		ll->attr.scoped = PS_LL_SCOPE_ABSTRACT_UNIX_SOCKET | PS_LL_SCOPE_SIGNAL;
		ll->attr_size = sizeof(struct ps_ll_ruleset_attr);
	}
	ll->write_access = FS_WRITE & fs;
}

/* A path that does not exist is skipped (nothing to grant); say so once, in the parent. */
static int push_rule(struct ps_landlock *ll, const char *path, uint64_t access, char *err,
		     size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			if (getenv("PYSNIP_DEBUG"))
				fprintf(stderr, "pysnip: landlock: %s does not exist, no rule\n", path);
			return 0;
		}
		snprintf(err, errlen, "landlock: stat(%s): %s", path, strerror(errno));
		return -1;
	}
	access &= ll->attr.handled_access_fs;
	if (!S_ISDIR(st.st_mode))
		access &= FS_FILE_RIGHTS;
	ll->rules[ll->n].path = strdup(path);
	if (!ll->rules[ll->n].path) {
		snprintf(err, errlen, "landlock: out of memory");
		return -1;
	}
	ll->rules[ll->n].fd = -1;
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		ll->rules[ll->n].fd = fcntl(fd, F_DUPFD_CLOEXEC, RULE_FD_MIN);
		close(fd);
	}
	ll->rules[ll->n++].access = access;
	return 0;
}

/* Test knob: PYSNIP_LANDLOCK_MAX_ABI=N negotiates as if the kernel stopped at ABI N (2 is
 * Debian 12's 6.1), so the layer tests also see what an older kernel leaves to the other
 * layers. It can only lower the ABI. Read here, in the parent, before any worker exists. */
static int cap_abi(int abi, char *err, size_t errlen)
{
	const char *s = getenv("PYSNIP_LANDLOCK_MAX_ABI");
	char *end;
	long max;

	if (!s || !*s)
		return abi;
	errno = 0;
	max = strtol(s, &end, 10);
	if (errno || *end || max < 1) {
		snprintf(err, errlen, "PYSNIP_LANDLOCK_MAX_ABI=%s: want a Landlock ABI number, 1 or more",
			 s);
		return -1;
	}
	return max < abi ? (int)max : abi;
}

int ps_landlock_prepare(const struct ps_policy *p, const char *const *ro_paths, size_t n_ro,
			struct ps_landlock **out, char *err, size_t errlen)
{
	size_t cap = n_ro + p->write_paths.n + PS_ARRAY_LEN(runtime_paths);
	struct ps_landlock *ll;
	int abi = ps_landlock_abi();

	*out = NULL;
	if (abi <= 0) {
		snprintf(err, errlen, "landlock: not available in this kernel "
			 "(landlock_create_ruleset: %s)", strerror(errno));
		return -1;
	}
	abi = cap_abi(abi, err, errlen);
	if (abi < 0)
		return -1;
	ll = calloc(1, sizeof(*ll) + cap * sizeof(ll->rules[0]));
	if (!ll) {
		snprintf(err, errlen, "landlock: out of memory");
		return -1;
	}
	ll->abi = abi;
	ruleset_for_abi(abi, ll);
	for (size_t i = 0; i < n_ro; i++)
		if (ro_paths[i] && push_rule(ll, ro_paths[i], FS_READ, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < PS_ARRAY_LEN(runtime_paths); i++)
		if (push_rule(ll, runtime_paths[i].path, runtime_paths[i].access, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < p->write_paths.n; i++)
		if (push_rule(ll, p->write_paths.items[i], ll->write_access, err, errlen) < 0)
			goto fail;
	*out = ll;
	return 0;
fail:
	ps_landlock_free(ll);
	return -1;
}

void ps_landlock_free(struct ps_landlock *ll)
{
	if (!ll)
		return;
	for (size_t i = 0; i < ll->n; i++) {
		free(ll->rules[i].path);
		if (ll->rules[i].fd >= 0)
			close(ll->rules[i].fd);
	}
	free(ll);
}

/* ---- child side ---- */

/* fd: the parent's O_PATH descriptor, or -1 to open path here. A path the worker's uid
 * can't reach is no loss: it could not read it anyway (nor through a rule the parent's
 * descriptor made: the permission checks still apply). */
static int add_path(int ruleset, const char *path, int fd, uint64_t access,
		    struct ps_child_err *e)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = access };
	int rc;

	pb.parent_fd = fd >= 0 ? fd : open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0) {
		if (errno == EACCES || errno == ENOENT)
			return 0;
		ps_child_err_set(e, errno, "landlock: open(%s, O_PATH): %s", path, ps_errstr(errno));
		return -1;
	}
	rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	if (rc < 0)
		ps_child_err_set(e, errno, "landlock_add_rule(%s, 0x%llx): %s", path,
				 (unsigned long long)access, ps_errstr(errno));
	if (fd < 0)
		close(pb.parent_fd);
	return rc;
}

int ps_landlock_apply(const struct ps_landlock *ll, const char *scratch, struct ps_held *held,
		      struct ps_child_err *e)
{
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ll->attr, ll->attr_size, 0);
	int rc = -1;

	if (rs < 0) {
		ps_child_err_set(e, errno, "landlock_create_ruleset(ABI %d): %s", ll->abi,
				 ps_errstr(errno));
		return -1;
	}
	for (size_t i = 0; i < ll->n; i++)
		if (add_path(rs, ll->rules[i].path, ll->rules[i].fd, ll->rules[i].access, e) < 0)
			goto out;
	if (scratch && add_path(rs, scratch, -1, ll->write_access, e) < 0)
		goto out;
	/* Requires no_new_privs (or CAP_SYS_ADMIN): the nnp phase runs before. */
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		ps_child_err_set(e, errno, "landlock_restrict_self(): %s", ps_errstr(errno));
		goto out;
	}
	held->landlock_abi = ll->abi;
	rc = 0;
out:
	close(rs);
	return rc;
}
