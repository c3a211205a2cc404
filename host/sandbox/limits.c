/* rlimits, applied in the worker from one table.
 *
 * Each row says which resource, where its value comes from, and why. rlimits only ever
 * go down here (a limit already lower than the policy's is kept), so this phase needs
 * no privilege and cannot fail for lack of one. */
#include <errno.h>
#include <sys/resource.h>

#include "sandbox.h"

/* ASan reserves terabytes of shadow address space at start-up: under it, any address space
 * or data limit fails every later mapping. Sanitizer builds leave memory to the tests. */
#if defined(__SANITIZE_ADDRESS__)
#define PS_MEMORY_RLIMITS false
#else
#define PS_MEMORY_RLIMITS true
#endif

enum value_src {
	FROM_CPU,	/* ceil(cpu_ms / 1000) seconds */
	FROM_MEMORY,
	FROM_FILE_SIZE,
	FROM_OPEN_FILES,
	FROM_PROCESSES,
	ZERO,
};

static const struct rlimit_row {
	int resource;
	const char *name;
	enum value_src src;
	bool private_uid_only;
	bool after_fds;		/* only once the inherited descriptors are closed */
} rows[] = {
	/* soft = hard: the hard limit's SIGKILL is what ends a CPU hog. A soft limit below it
	 * only sends SIGXCPU, which a snippet can catch or ignore (signal.signal). */
	{ RLIMIT_CPU, "RLIMIT_CPU", FROM_CPU, false, false },
	/* Address space is what a runaway allocation hits first; DATA covers brk and
	 * anonymous private mappings on kernels that count them separately. */
	{ RLIMIT_AS, "RLIMIT_AS", FROM_MEMORY, false, false },
	{ RLIMIT_DATA, "RLIMIT_DATA", FROM_MEMORY, false, false },
	{ RLIMIT_FSIZE, "RLIMIT_FSIZE", FROM_FILE_SIZE, false, false },
	/* After the worker's fd phase: until then it holds what its parent had open (a zygote's
	 * channels to every live worker), which could leave no number under the limit for the
	 * descriptors the phases open themselves (Landlock's ruleset: EMFILE under load). */
	{ RLIMIT_NOFILE, "RLIMIT_NOFILE", FROM_OPEN_FILES, false, true },
	/* Counted per real uid across the whole host: only meaningful when the uid is ours. */
	{ RLIMIT_NPROC, "RLIMIT_NPROC", FROM_PROCESSES, true, false },
	/* No core files (they would land in scratch and could hold the zygote's memory). */
	{ RLIMIT_CORE, "RLIMIT_CORE", ZERO, false, false },
	/* Locked memory and POSIX message queues are host-wide resources a snippet has no use for. */
	{ RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", ZERO, false, false },
	{ RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE", ZERO, false, false },
	/* No realtime scheduling: a busy loop at RT priority could starve the supervisor. */
	{ RLIMIT_RTPRIO, "RLIMIT_RTPRIO", ZERO, false, false },
};

/* The row's value, or false where the row does not apply. A value is what the kernel gets,
 * 0 included: 0 is the tightest limit everywhere (file_size 0: not one byte), never "no
 * limit", so that a request that lowers a limit to 0 can only ever tighten it. The schema
 * keeps the others at 1 or more. */
static bool row_value(const struct rlimit_row *row, const struct ps_limits *l, rlim_t *v)
{
	switch (row->src) {
	case FROM_CPU:
		*v = l->cpu_ms == PS_LIMIT_NONE ? RLIM_INFINITY : (rlim_t)((l->cpu_ms + 999) / 1000);
		return true;
	case FROM_MEMORY:
		*v = (rlim_t)l->memory_bytes;
		return PS_MEMORY_RLIMITS;
	case FROM_FILE_SIZE:
		*v = (rlim_t)l->file_size_bytes;
		return true;
	case FROM_OPEN_FILES:
		*v = (rlim_t)l->open_files;
		return true;
	case FROM_PROCESSES:
		*v = (rlim_t)l->processes;
		return true;
	case ZERO:
		*v = 0;
		return true;
	}
	return false;
}

int ps_limits_apply(const struct ps_limits *l, bool private_uid, enum ps_limits_stage stage,
		    struct ps_child_err *e)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct rlimit_row *row = &rows[i];
		struct rlimit cur, want;
		rlim_t v;

		if (row->private_uid_only && !private_uid)
			continue;
		if ((stage == PS_LIMITS_BEFORE_FDS && row->after_fds) ||
		    (stage == PS_LIMITS_AFTER_FDS && !row->after_fds))
			continue;
		if (!row_value(row, l, &v))
			continue;
		if (getrlimit(row->resource, &cur) < 0) {
			ps_child_err_set(e, errno, "getrlimit(%s): %s", row->name, ps_errstr(errno));
			return -1;
		}
		/* Never raise: keep a lower limit the host already set. */
		if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
			v = cur.rlim_max;
		want.rlim_cur = want.rlim_max = v;
		if (setrlimit(row->resource, &want) < 0) {
			ps_child_err_set(e, errno, "setrlimit(%s, %llu): %s", row->name,
					 (unsigned long long)v, ps_errstr(errno));
			return -1;
		}
	}
	return 0;
}
