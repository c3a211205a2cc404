/* Files a run finds in its scratch before it starts: matplotlib's prebuilt font list (so that
 * no run spends a second rebuilding it), the caller's inputs. Child side, before the identity
 * drop and Landlock: the sources are read with the host's rights, the copies are the run's. */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

/* Copy src (a regular file) to dst under dirfd with mode, owned by uid/gid. */
static int copy_file(const char *src, int dirfd, const char *dst, mode_t mode, uid_t uid,
		     gid_t gid, struct ps_child_err *e)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	struct stat sb;
	ssize_t n;

	if (in < 0 || fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		ps_child_err_set(e, in < 0 ? errno : EINVAL, "open(%s): %s", src,
				 in < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	out = openat(dirfd, dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0) {
		ps_child_err_set(e, errno, "open(%s): %s", dst, strerror(errno));
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (ps_write_all(out, buf, (size_t)n) < 0) {
			ps_child_err_set(e, errno, "write(%s): %s", dst, strerror(errno));
			goto out;
		}
	if (n < 0) {
		ps_child_err_set(e, errno, "read(%s): %s", src, strerror(errno));
		goto out;
	}
	if (getuid() == 0 && fchown(out, uid, gid) < 0) {
		ps_child_err_set(e, errno, "fchown(%s): %s", dst, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* A directory of the run's own under the cwd (the scratch). */
static int own_dir(const char *name, mode_t mode, uid_t uid, gid_t gid, struct ps_child_err *e)
{
	if (mkdir(name, mode) < 0 && errno != EEXIST) {
		ps_child_err_set(e, errno, "mkdir(%s): %s", name, strerror(errno));
		return -1;
	}
	if (getuid() == 0 && chown(name, uid, gid) < 0) {
		ps_child_err_set(e, errno, "chown(%s): %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

int ps_files_seed_mpl(const char *cache_dir, uid_t uid, gid_t gid, struct ps_child_err *e)
{
	DIR *d = opendir(cache_dir);
	struct dirent *de;
	int dfd, rc = 0;

	if (!d)
		return 0;	/* no prebuilt cache: matplotlib builds one per run (slow, but works) */
	if (own_dir(".matplotlib", 0755, uid, gid, e) < 0 ||
	    (dfd = open(".matplotlib", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (!e->msg[0])
			ps_child_err_set(e, errno, "open(.matplotlib): %s", strerror(errno));
		closedir(d);
		return -1;
	}
	while (rc == 0 && (de = readdir(d))) {
		char src[4096];
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "fontlist-", 9) || n < 5 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		snprintf(src, sizeof(src), "%s/%s", cache_dir, de->d_name);
		rc = copy_file(src, dfd, de->d_name, 0644, uid, gid, e);
	}
	close(dfd);
	closedir(d);
	return rc;
}

/* The caller's file itself, read-only: a bind mount of it on an empty file, remounted
 * read-only (and nosuid, nodev, noexec) in the run's own mount namespace. */
static int bind_ro(const char *src, const char *dst, struct ps_child_err *e)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);

	if (fd < 0) {
		ps_child_err_set(e, errno, "open(%s): %s", dst, strerror(errno));
		return -1;
	}
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		ps_child_err_set(e, errno, "mount(%s, %s, MS_BIND): %s", src, dst, strerror(errno));
		unlink(dst);
		return -1;
	}
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
		  MS_NOEXEC, NULL) < 0) {
		ps_child_err_set(e, errno, "mount(%s, MS_REMOUNT|MS_RDONLY): %s", dst, strerror(errno));
		umount2(dst, MNT_DETACH);
		unlink(dst);
		return -1;
	}
	return 0;
}

/* A served request's bytes, as a read-only file of the run's. */
static int write_data(const struct ps_file_in *f, const char *dst, uid_t uid, gid_t gid,
		      struct ps_child_err *e)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	int rc = fd < 0 ? -errno : ps_write_all(fd, f->data, f->len);

	if (rc == 0 && getuid() == 0 && fchown(fd, uid, gid) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		ps_child_err_set(e, -rc, "writing %s: %s", dst, strerror(-rc));
	return rc < 0 ? -1 : 0;
}

int ps_files_place_inputs(const struct ps_file_in *in, size_t n, bool bind, uid_t uid,
			  gid_t gid, struct ps_child_err *e)
{
	char dst[300];

	if (!n)
		return 0;
	/* root's and read-only when we are root: the run can neither add nor swap an entry */
	if (own_dir("input", 0755, getuid() == 0 ? 0 : uid, getuid() == 0 ? 0 : gid, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		snprintf(dst, sizeof(dst), "input/%s", in[i].name);
		if (in[i].path) {
			/* no mount namespace, or the host refuses the bind: a copy, which the run
			 * may change without touching the caller's file */
			if ((!bind || bind_ro(in[i].path, dst, e) < 0) &&
			    copy_file(in[i].path, AT_FDCWD, dst, 0444, 0, 0, e) < 0)
				return -1;
		} else if (write_data(&in[i], dst, uid, gid, e) < 0) {
			return -1;
		}
	}
	if (chmod("input", 0555) < 0) {
		ps_child_err_set(e, errno, "chmod(input): %s", strerror(errno));
		return -1;
	}
	return 0;
}

int ps_files_make_output(uid_t uid, gid_t gid, struct ps_child_err *e)
{
	return own_dir("output", 0755, uid, gid, e);
}
