/* Identity drop and no_new_privs, applied in the worker.
 *
 * As real root the worker becomes the policy's uid/gid with no supplementary groups and
 * no capability in any set (effective, permitted, inheritable, ambient, bounding), and the
 * securebits are locked so that nothing can make uid 0 special again. Not root (or inside
 * a user namespace, where we may hold every capability over our own namespace) the uid
 * stays but the capabilities are cleared all the same. Every step is verified with the
 * kernel's own view before the worker goes on: a half-done drop never runs a snippet. */
#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

/* Kernels know more capabilities than our headers do: probe until the kernel says EINVAL. */
#define CAP_PROBE_MAX 64

/* NOROOT: uid 0 gains nothing at exec. KEEP_CAPS stays off and NO_SETUID_FIXUP stays off,
 * so any uid change clears capabilities; NO_CAP_AMBIENT_RAISE forbids ambient raises.
 * All of them locked. */
static const unsigned long locked_securebits =
	SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
	SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

void ps_identity_plan(const struct ps_policy *p, unsigned worker_slot, struct ps_identity *out)
{
	uid_t ruid, euid, suid;

	out->drop_uid = getresuid(&ruid, &euid, &suid) == 0 && ruid == 0 && euid == 0;
	out->per_process = p->uid_per_process;
	out->uid = (uid_t)p->uid;
	if (!p->uid_per_process && p->uid_count > 1)
		out->uid += worker_slot % p->uid_count;
	out->gid = (gid_t)p->gid;
}

int ps_identity_bind_pid(struct ps_identity *id, struct ps_child_err *e)
{
	char buf[32], *end;
	ssize_t n;
	unsigned long pid;

	if (!id->per_process || !id->drop_uid)
		return 0;
	/* Not getpid(): a worker may sit in a PID namespace, where pids repeat across zygotes
	 * and servers. The host's procfs names it by its pid there. */
	n = readlink("/proc/self", buf, sizeof(buf) - 1);
	if (n <= 0) {
		ps_child_err_set(e, n < 0 ? errno : EIO, "readlink(/proc/self): %s",
				 ps_errstr(n < 0 ? errno : EIO));
		return -1;
	}
	buf[n] = '\0';
	pid = strtoul(buf, &end, 10);
	if (*end || pid == 0 || pid >= PS_UID_PER_PROCESS_SPAN) {
		ps_child_err_set(e, ERANGE, "readlink(/proc/self) = '%s': not a pid below %u", buf,
				 PS_UID_PER_PROCESS_SPAN);
		return -1;
	}
	id->uid += (uid_t)pid;
	id->gid += (gid_t)pid;
	id->per_process = false;	/* bound */
	return 0;
}

/* One id file: "name:x:ID:..." (passwd, group; field 2) or "name:START:COUNT" (subuid,
 * subgid). The first entry that overlaps [lo, hi], or 0 with none (a missing file has none). */
static int first_overlap(const char *path, bool range, uint64_t lo, uint64_t hi, char *entry,
			 size_t len)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *name = strtok_r(line, ":\n", &save);
		char *a = name ? strtok_r(NULL, ":\n", &save) : NULL;
		uint64_t start, count = 1;

		if (!a)
			continue;
		if (!range && !(a = strtok_r(NULL, ":\n", &save)))
			continue;
		start = strtoull(a, NULL, 10);
		if (range) {
			char *c = strtok_r(NULL, ":\n", &save);

			count = c ? strtoull(c, NULL, 10) : 0;
		}
		if (count && start <= hi && start + count - 1 >= lo) {
			if (range)
				snprintf(entry, len, "'%s' (%" PRIu64 "+%" PRIu64 ")", name, start,
					 count);
			else
				snprintf(entry, len, "'%s' (%" PRIu64 ")", name, start);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

int ps_identity_check_range(const struct ps_policy *p, char *err, size_t errlen)
{
	static const struct {
		const char *path;
		bool range, gid;
	} files[] = {
		{ "/etc/passwd", false, false }, { "/etc/subuid", true, false },
		{ "/etc/group", false, true },	 { "/etc/subgid", true, true },
	};
	char entry[256];

	if (!p->uid_per_process)
		return 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint64_t lo = files[i].gid ? p->gid : p->uid, hi = lo + p->uid_count - 1;

		if (first_overlap(files[i].path, files[i].range, lo, hi, entry, sizeof(entry))) {
			snprintf(err, errlen, "policy %s: field identity.uid_count: \"per-process\" "
				 "%ss %" PRIu64 "..%" PRIu64 " are not free: %s in %s uses them",
				 p->name ? p->name : "?", files[i].gid ? "gid" : "uid", lo, hi, entry,
				 files[i].path);
			return -1;
		}
	}
	return 0;
}

static bool have_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &hdr, d) < 0)
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* Every capability still in the bounding set. Only what is still there: a zygote dropped
 * the rest once (ps_identity_drop_bounding), and every drop copies and commits the
 * credentials (~1 us each). Needs CAP_SETPCAP. */
static int drop_bounding(struct ps_child_err *e)
{
	for (int cap = 0; cap < CAP_PROBE_MAX; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0 && errno == EINVAL)
			break;
		if (in == 0 || prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		ps_child_err_set(e, errno, "prctl(PR_CAPBSET_DROP, %d): %s", cap, ps_errstr(errno));
		return -1;
	}
	return 0;
}

/* Ambient, bounding and securebits first: the last two need CAP_SETPCAP, which the uid
 * change takes away. Without CAP_SETPCAP (a plain unprivileged user) the bounding set
 * cannot shrink; it then only lists capabilities nothing can gain under no_new_privs. */
static int drop_bounding_and_lock(struct ps_child_err *e)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
		ps_child_err_set(e, errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL): %s", ps_errstr(errno));
		return -1;
	}
	if (!have_cap(CAP_SETPCAP))
		return 0;
	if (drop_bounding(e) < 0)
		return -1;
	if (prctl(PR_SET_SECUREBITS, locked_securebits, 0, 0, 0) < 0) {
		ps_child_err_set(e, errno, "prctl(PR_SET_SECUREBITS, 0x%lx): %s", locked_securebits,
				 ps_errstr(errno));
		return -1;
	}
	return 0;
}

void ps_identity_drop_bounding(void)
{
	struct ps_child_err e;

	if (have_cap(CAP_SETPCAP))
		(void)drop_bounding(&e);	/* the workers drop what is left, and say why */
}

static int change_ids(const struct ps_identity *id, struct ps_child_err *e)
{
	if (setgroups(0, NULL) < 0) {
		ps_child_err_set(e, errno, "setgroups(0): %s", ps_errstr(errno));
		return -1;
	}
	if (setresgid(id->gid, id->gid, id->gid) < 0) {
		ps_child_err_set(e, errno, "setresgid(%u): %s", (unsigned)id->gid, ps_errstr(errno));
		return -1;
	}
	if (setresuid(id->uid, id->uid, id->uid) < 0) {
		ps_child_err_set(e, errno, "setresuid(%u): %s", (unsigned)id->uid, ps_errstr(errno));
		return -1;
	}
	return 0;
}

/* libcap-ng clears effective, permitted and inheritable in one capset. Its state is
 * thread-local and this is a fresh child, so point it at ourselves (pid 0) first. */
static int clear_caps(struct ps_child_err *e)
{
	capng_setpid(0);
	capng_clear(CAPNG_SELECT_CAPS);
	if (capng_apply(CAPNG_SELECT_CAPS) < 0) {
		ps_child_err_set(e, errno, "capng_apply(CAPNG_SELECT_CAPS): %s", ps_errstr(errno));
		return -1;
	}
	return 0;
}

/* The kernel's view, not libcap-ng's: every capability set empty, ids as planned. */
static int verify(const struct ps_identity *id, bool bounding_dropped, struct ps_child_err *e)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uid_t r, ef, s;
	gid_t gr, ge, gs;

	if (id->drop_uid) {
		if (getresuid(&r, &ef, &s) < 0 || r != id->uid || ef != id->uid || s != id->uid) {
			ps_child_err_set(e, EPERM, "verify: uids are %u/%u/%u, want %u", (unsigned)r,
					 (unsigned)ef, (unsigned)s, (unsigned)id->uid);
			return -1;
		}
		if (getresgid(&gr, &ge, &gs) < 0 || gr != id->gid || ge != id->gid || gs != id->gid) {
			ps_child_err_set(e, EPERM, "verify: gids are %u/%u/%u, want %u", (unsigned)gr,
					 (unsigned)ge, (unsigned)gs, (unsigned)id->gid);
			return -1;
		}
		if (getgroups(0, NULL) != 0) {
			ps_child_err_set(e, EPERM, "verify: supplementary groups remain");
			return -1;
		}
	}
	if (syscall(SYS_capget, &hdr, d) < 0) {
		ps_child_err_set(e, errno, "capget(): %s", ps_errstr(errno));
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (d[i].effective || d[i].permitted || d[i].inheritable) {
			ps_child_err_set(e, EPERM, "verify: capabilities remain (word %d: %x/%x/%x)", i,
					 d[i].effective, d[i].permitted, d[i].inheritable);
			return -1;
		}
	}
	for (int cap = 0; cap < CAP_PROBE_MAX; cap++) {
		int amb = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
		int bnd = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (bnd < 0)
			break;
		if (amb > 0 || (bounding_dropped && bnd > 0)) {
			ps_child_err_set(e, EPERM, "verify: capability %d still in the %s set", cap,
					 amb > 0 ? "ambient" : "bounding");
			return -1;
		}
	}
	return 0;
}

int ps_identity_apply(const struct ps_identity *id, struct ps_held *held, struct ps_child_err *e)
{
	bool could_drop_bounding = have_cap(CAP_SETPCAP);

	if (drop_bounding_and_lock(e) < 0)
		return -1;
	if (id->drop_uid && change_ids(id, e) < 0)
		return -1;
	if (clear_caps(e) < 0 || verify(id, could_drop_bounding, e) < 0)
		return -1;
	held->uid = (int32_t)getuid();
	held->gid = (int32_t)getgid();
	held->caps_cleared = 1;
	return 0;
}

/* no_new_privs: exec can never again grant privileges (setuid bits, file capabilities), and
 * unprivileged Landlock and seccomp require it. Not dumpable: no ptrace attach and no
 * /proc/PID/mem from a same-uid process, no core file. Both read back. */
int ps_nnp_apply(struct ps_held *held, struct ps_child_err *e)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		ps_child_err_set(e, errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", ps_errstr(errno));
		return -1;
	}
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		ps_child_err_set(e, errno, "prctl(PR_SET_DUMPABLE, 0): %s", ps_errstr(errno));
		return -1;
	}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) {
		ps_child_err_set(e, EPERM, "verify: no_new_privs or dumpable did not stick");
		return -1;
	}
	held->no_new_privs = 1;
	held->not_dumpable = 1;
	return 0;
}
