/* Files a run finds in its scratch before it starts: matplotlib's prebuilt font list (so that
 * no run spends a second rebuilding it), the caller's inputs. Child side, before the identity
 * drop and Landlock: the sources are read with the host's rights, the copies are the run's. */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

/* Copy src (a regular file, no symlink) to dst under dirfd, mode 0644, owned by uid/gid. */
static int copy_file(const char *src, int dirfd, const char *dst, uid_t uid, gid_t gid,
		     struct ps_child_err *e)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1, rc = -1;
	struct stat sb;
	ssize_t n;

	if (in < 0 || fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		ps_child_err_set(e, in < 0 ? errno : EINVAL, "open(%s): %s", src,
				 in < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	out = openat(dirfd, dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
		rc = copy_file(src, dfd, de->d_name, uid, gid, e);
	}
	close(dfd);
	closedir(d);
	return rc;
}
