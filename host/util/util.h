/* Small helpers shared by every module: messages, units, files. */
#ifndef PS_UTIL_H
#define PS_UTIL_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* pysnip's own exit status (DESIGN.md section 2): 0 ran, 1 usage or policy error, 2 internal. */
enum { PS_EXIT_OK = 0, PS_EXIT_USAGE = 1, PS_EXIT_INTERNAL = 2 };

#define PS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* "pysnip: " + message on stderr. Parent side only: never after fork. */
void ps_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Human units. Sizes: "123", "64K", "256M", "2G" (powers of 1024; a "B" or "iB" suffix is allowed).
 * Durations: "500ms", "2s", "1.5s", "1m", "100us"; a bare number is seconds.
 * Return 0, or -1 with a reason in err ("bad unit 'X'", "not a number", "too large"). */
int ps_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
int ps_parse_duration_ms(const char *s, uint64_t *out, char *err, size_t errlen);
/* Human units back from numbers, in the largest unit that is exact ("256M", "1536K", "90s",
 * "1500ms"), so the text parses back to the same value (units.c). */
void ps_format_size(uint64_t bytes, char *buf, size_t len);
void ps_format_duration_ms(uint64_t ms, char *buf, size_t len);

/* Whole file into a NUL-terminated malloc'd buffer; *len excludes the NUL. 0 or -errno. */
int ps_read_file(const char *path, char **buf, size_t *len);
int ps_read_fd(int fd, char **buf, size_t *len, size_t max);

/* Replace this process with NAME, next to this binary, run as `NAME CMD ARGV...`. Returns
 * only on failure (-errno, after a message naming the path). */
int ps_exec_sibling(const char *name, const char *cmd, int argc, char **argv);

/* Directory holding the running binary (resolved once). */
const char *ps_exe_dir(void);

/* Where per-run scratch directories go: $TMPDIR when set (absolute); else, when they are only
 * mountpoints for a worker's own tmpfs (mountpoints_only), /dev/shm if it is a writable tmpfs,
 * so that making and removing one costs no journaled disk metadata (an ext4 rmdir is ~0.2 ms,
 * and far more while the disk writes back); else /tmp. */
const char *ps_scratch_base(bool mountpoints_only);

/* Monotonic milliseconds/microseconds. */
uint64_t ps_now_us(void);

/* read() exactly len bytes, retrying on EINTR/short reads. 0, -errno, or -EPIPE at an early
 * EOF. Async-signal-safe, no allocation: usable in a worker after fork. */
int ps_read_exact(int fd, void *buf, size_t len);

/* write() all of buf, retrying on EINTR/short writes. 0 or -errno. Async-signal-safe. */
int ps_write_all(int fd, const void *buf, size_t len);
/* line and a newline, in one write when it fits (a reader of lines wakes once). 0 or -errno. */
/* Every byte of the iovecs (short writes and EINTR resumed; iov is consumed). 0 or -errno. */
struct iovec;
int ps_writev_all(int fd, struct iovec *iov, int n);
int ps_write_line(int fd, const char *line, size_t len);
/* One descriptor over a unix socket (SCM_RIGHTS) with one byte of data, tag. 0 or -errno.
 * No allocation: a child may call it after fork. */
int ps_send_fd(int sock, int fd, char tag);

/* Remove a directory tree (for per-run scratch). 0 or -errno. */
int ps_rmtree(const char *path);

/* pid pinned to the CPU the caller runs on, where that is one of all and all has two or more
 * (the front's and the session host's short-run pinning): true when done. */
bool ps_pin_here(pid_t pid, const cpu_set_t *all);

#endif
