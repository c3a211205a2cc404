/* Small helpers shared by every module. Parent side unless noted. */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/magic.h>

void ps_err(const char *fmt, ...)
{
	va_list ap;
	char buf[1024];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fprintf(stderr, "pysnip: %s\n", buf);
}

int ps_read_fd(int fd, char **buf, size_t *len, size_t max)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= max) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(b);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int ps_read_file(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	ret = ps_read_fd(fd, buf, len, (size_t)1 << 31);
	close(fd);
	return ret;
}

const char *ps_exe_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		strcpy(dir, ".");
		return dir;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	return dir;
}

int ps_exec_sibling(const char *name, const char *cmd, int argc, char **argv)
{
	char path[PATH_MAX];
	char **args = calloc((size_t)argc + 3, sizeof(char *));
	int e;

	if (!args) {
		ps_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s", ps_exe_dir(), name);
	args[0] = path;
	args[1] = (char *)cmd;
	for (int i = 0; i < argc; i++)
		args[i + 2] = argv[i];
	execv(path, args);
	e = errno;
	ps_err("%s: execv(%s): %s", cmd, path, strerror(e));
	free(args);
	return -e;
}

const char *ps_scratch_base(bool mountpoints_only)
{
	const char *tmp = getenv("TMPDIR");
	struct statfs sf;

	if (tmp && *tmp == '/')
		return tmp;
	if (mountpoints_only && statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

uint64_t ps_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int ps_read_exact(int fd, void *buf, size_t len)
{
	char *b = buf;

	while (len) {
		ssize_t n = read(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

int ps_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int ps_writev_all(int fd, struct iovec *iov, int n)
{
	for (;;) {
		ssize_t w;

		for (; n > 0 && !iov->iov_len; iov++, n--)
			;
		if (n == 0)
			return 0;
		w = writev(fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		for (; n > 0 && (size_t)w >= iov->iov_len; iov++, n--)
			w -= (ssize_t)iov->iov_len;
		if (n > 0) {	/* a short write: the rest of this iovec, then the others */
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

int ps_write_line(int fd, const char *line, size_t len)
{
	struct iovec iov[2] = { { (void *)line, len }, { "\n", 1 } };

	return ps_writev_all(fd, iov, 2);
}

static int rmtree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int ret = 0;

	if (fd < 0)
		return unlinkat(parent, name, 0) == 0 ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)
			ret = rmtree_at(dirfd(d), de->d_name);
		else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
			ret = -errno;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

int ps_rmtree(const char *path)
{
	return rmtree_at(AT_FDCWD, path);
}

int ps_send_fd(int sock, int fd, char tag)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &tag, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	__builtin_memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

bool ps_pin_here(pid_t pid, const cpu_set_t *all)
{
	int cpu = sched_getcpu();
	cpu_set_t one;

	if (pid <= 0 || cpu < 0 || CPU_COUNT(all) < 2 || !CPU_ISSET(cpu, all))
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(pid, sizeof(one), &one) == 0;
}
