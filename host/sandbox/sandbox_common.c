/* Shared by the kernel layers: the child-side error record.
 *
 * ps_child_err_set runs in the worker after fork, where stdio and malloc are off limits
 * (another thread of the zygote could have held a lock at fork time, and a half-dropped
 * privilege state must not run library code we do not control). So this is a tiny
 * printf subset that only writes into the fixed buffer: %s %d %i %u %x %o %ld %lu %lld %llu
 * %zu %c %%; ps_errstr gives strerror text from a table rather than strerror(3) (locale). */
#include "sandbox.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

struct out {
	char *p;
	size_t left;	/* room before the terminating NUL */
};

static void put_c(struct out *o, char c)
{
	if (o->left) {
		*o->p++ = c;
		o->left--;
	}
}

static void put_s(struct out *o, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s)
		put_c(o, *s++);
}

static void put_u(struct out *o, unsigned long long v, unsigned base)
{
	char buf[24];
	int n = 0;

	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put_c(o, buf[--n]);
}

static void put_d(struct out *o, long long v)
{
	if (v < 0) {
		put_c(o, '-');
		put_u(o, 0ULL - (unsigned long long)v, 10);
	} else {
		put_u(o, (unsigned long long)v, 10);
	}
}

/* strerror(3) may allocate (locale); the errnos a privilege drop can see are few. */
static const struct {
	int err;
	const char *text;
} err_text[] = {
	{ EPERM, "Operation not permitted" },
	{ ENOENT, "No such file or directory" },
	{ ESRCH, "No such process" },
	{ EINTR, "Interrupted system call" },
	{ EIO, "Input/output error" },
	{ EBADF, "Bad file descriptor" },
	{ EAGAIN, "Resource temporarily unavailable" },
	{ ENOMEM, "Cannot allocate memory" },
	{ EACCES, "Permission denied" },
	{ EFAULT, "Bad address" },
	{ EBUSY, "Device or resource busy" },
	{ EEXIST, "File exists" },
	{ ENOTDIR, "Not a directory" },
	{ EINVAL, "Invalid argument" },
	{ EMFILE, "Too many open files" },
	{ ENOSPC, "No space left on device" },
	{ EROFS, "Read-only file system" },
	{ ENOSYS, "Function not implemented" },
	{ EOPNOTSUPP, "Operation not supported" },
	{ E2BIG, "Argument list too long" },
	{ ENODEV, "No such device" },
};

const char *ps_errstr(int err)
{
	for (size_t i = 0; i < sizeof(err_text) / sizeof(err_text[0]); i++)
		if (err_text[i].err == err)
			return err_text[i].text;
	return "Unknown error";
}

/* Length modifiers l, ll, z; conversions d i u x o s c %. Unknown ones print verbatim. */
static void format(struct out *o, const char *fmt, va_list ap)
{
	for (; *fmt; fmt++) {
		int lng = 0;

		if (*fmt != '%') {
			put_c(o, *fmt);
			continue;
		}
		fmt++;
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i':
			put_d(o, lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long)
									 : va_arg(ap, int));
			break;
		case 'u':
		case 'x':
		case 'o':
			put_u(o, lng >= 2 ? va_arg(ap, unsigned long long)
				 : lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned),
			      *fmt == 'x' ? 16 : *fmt == 'o' ? 8 : 10);
			break;
		case 's':
			put_s(o, va_arg(ap, const char *));
			break;
		case 'c':
			put_c(o, (char)va_arg(ap, int));
			break;
		case '%':
			put_c(o, '%');
			break;
		case '\0':
			return;
		default:
			put_c(o, '%');
			put_c(o, *fmt);
		}
	}
}

/* msg = the formatted text (callers put the reason in: "setresuid(65534): %s", ps_errstr(e)). */
void ps_child_err_set(struct ps_child_err *e, int err, const char *fmt, ...)
{
	struct out o = { e->msg, sizeof(e->msg) - 1 };
	va_list ap;

	va_start(ap, fmt);
	format(&o, fmt, ap);
	va_end(ap);
	*o.p = '\0';
	e->err = err;
}

/* snprintf for the child: returns the length written (truncated to size - 1). */
int ps_fmt(char *buf, size_t size, const char *fmt, ...)
{
	struct out o = { buf, size ? size - 1 : 0 };
	va_list ap;

	if (!size)
		return 0;
	va_start(ap, fmt);
	format(&o, fmt, ap);
	va_end(ap);
	*o.p = '\0';
	return (int)(o.p - buf);
}
