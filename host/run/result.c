/* The verdict: classify an outcome into one status and render DESIGN.md section 2 as JSON.
 * The worker's report is untrusted input (the snippet shares its process): it is parsed,
 * type-checked field by field, and never decides a status the kernel contradicts. */
#include "result.h"
#include "outfiles.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include "sandbox/sandbox.h"
#include "util/util.h"

static const char *const status_names[PS_STATUS_COUNT] = {
	[PS_STATUS_OK] = "ok",
	[PS_STATUS_EXCEPTION] = "exception",
	[PS_STATUS_DENIED] = "denied",
	[PS_STATUS_TIMEOUT] = "timeout",
	[PS_STATUS_CPU_LIMIT] = "cpu_limit",
	[PS_STATUS_MEMORY_LIMIT] = "memory_limit",
	[PS_STATUS_OUTPUT_LIMIT] = "output_limit",
	[PS_STATUS_SIGNAL] = "signal",
	[PS_STATUS_INTERNAL_ERROR] = "internal_error",
};

const char *ps_status_name(enum ps_status s)
{
	return (unsigned)s < PS_STATUS_COUNT ? status_names[s] : "internal_error";
}

/* --- bytes to JSON --- */

static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong, surrogate and out-of-range forms are invalid */
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

static size_t put_utf8(unsigned cp, char *o)
{
	if (cp < 0x80)
		return o[0] = (char)cp, 1;
	if (cp < 0x800)
		return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
	if (cp < 0x10000)
		return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
		       o[2] = (char)(0x80 | (cp & 0x3f)), 3;
	return o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
	       o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

char *ps_json_unquote_bytes(const char *q, size_t *len)
{
	size_t n = strlen(q), o = 0;
	char *out = n && q[0] == '"' ? malloc(n) : NULL;

	if (!out)
		return NULL;
	for (size_t i = 1; i < n; i++) {
		unsigned cp, lo;

		if (q[i] == '"') {
			*len = o;
			return out;
		}
		if (q[i] != '\\') {
			out[o++] = q[i];
			continue;
		}
		if (++i == n)
			break;
		switch (q[i]) {
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'u':
			if (i + 4 >= n || hex4(q + i + 1, &cp) < 0)
				goto bad;
			i += 4;
			if (cp >= 0xdc80 && cp <= 0xdcff) {	/* surrogateescape: the byte itself */
				out[o++] = (char)(cp & 0xff);
				break;
			}
			if (cp >= 0xd800 && cp <= 0xdbff && i + 6 < n && q[i + 1] == '\\' &&
			    q[i + 2] == 'u' && hex4(q + i + 3, &lo) == 0 && lo >= 0xdc00 &&
			    lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = 0xfffd;
			}
			o += put_utf8(cp, out + o);	/* at most 4 bytes for 6 or 12 of input */
			break;
		default:
			out[o++] = q[i];	/* \" \\ \/ */
		}
	}
bad:
	free(out);
	return NULL;
}

char *ps_json_quote_bytes(const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t cap = len * 6 + 3, o = 0;	/* worst case: every byte \uXXXX */
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[o++] = '"';
	for (size_t i = 0; i < len;) {
		unsigned c = s[i];
		size_t l = utf8_seq_len(s + i, len - i);

		if (l == 0) {
			o += (size_t)sprintf(out + o, "\\udc%02x", c);
			i++;
		} else if (l > 1) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			if (c == '"' || c == '\\') {
				out[o++] = '\\';
				out[o++] = (char)c;
			} else if (c == '\n') {
				out[o++] = '\\', out[o++] = 'n';
			} else if (c == '\t') {
				out[o++] = '\\', out[o++] = 't';
			} else if (c == '\r') {
				out[o++] = '\\', out[o++] = 'r';
			} else if (c < 0x20 || c == 0x7f) {
				o += (size_t)sprintf(out + o, "\\u%04x", c);
			} else {
				out[o++] = (char)c;
			}
			i++;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

static bool utf8_valid(const char *buf, size_t len)
{
	for (size_t i = 0, l; i < len; i += l)
		if (!(l = utf8_seq_len((const unsigned char *)buf + i, len - i)))
			return false;
	return true;
}

static void add_bytes(cJSON *obj, const char *key, const struct ps_capture *c)
{
	char *q = ps_json_quote_bytes(c->buf ? c->buf : "", c->len);

	if (q)
		cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(q));
	free(q);
}

/* --- the report --- */

struct report {
	cJSON *root;
	cJSON *exception;	/* object or NULL */
	cJSON *denials;		/* array or NULL */
	bool memory_error;
	bool finished;		/* the report was written: the shim reached its end */
};

static void report_parse(const struct ps_outcome *o, struct report *rep)
{
	cJSON *v;

	const char *start = NULL, *end;
	size_t tlen = strlen(o->report_token);

	memset(rep, 0, sizeof(*rep));
	if (!o->report.len || !tlen)
		return;
	/* Only what follows the last copy of the run's token is the shim's report: anything
	 * else on the channel was written by the snippet. */
	for (const char *p = o->report.buf;
	     (p = memmem(p, o->report.len - (size_t)(p - o->report.buf), o->report_token, tlen));
	     p += tlen)
		start = p + tlen;
	if (!start || *start != '\n')
		return;
	start++;
	/* The shim writes UTF-8 only; cJSON would copy other bytes into the verdict's strings,
	 * and the verdict would no longer be JSON text. */
	if (!utf8_valid(start, o->report.len - (size_t)(start - o->report.buf)))
		return;
	rep->root = cJSON_ParseWithLengthOpts(start, o->report.len - (size_t)(start - o->report.buf),
					      &end, false);
	if (!cJSON_IsObject(rep->root))
		return;
	while (end < o->report.buf + o->report.len && (*end == '\n' || *end == ' '))
		end++;
	if (end != o->report.buf + o->report.len)
		return;	/* something after the report: not the shim's last word */
	rep->finished = true;
	v = cJSON_GetObjectItemCaseSensitive(rep->root, "exception");
	if (cJSON_IsObject(v) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "type")))
		rep->exception = v;
	v = cJSON_GetObjectItemCaseSensitive(rep->root, "denials");
	if (cJSON_IsArray(v))
		rep->denials = v;
	rep->memory_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep->root, "memory_error"));
}

static const char *exc_str(const struct report *rep, const char *key)
{
	cJSON *v = rep->exception ? cJSON_GetObjectItemCaseSensitive(rep->exception, key) : NULL;

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool exc_is(const struct report *rep, const char *type)
{
	const char *t = exc_str(rep, "type");

	return t && !strcmp(t, type);
}

/* An uncaught exception raised by a sandbox layer rather than by the snippet's own logic. */
static bool exc_from_sandbox(const struct report *rep)
{
	const char *msg = exc_str(rep, "message");

	if (!rep->exception)
		return false;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep->exception, "denied")))
		return true;
	/* The message alone is forgeable (raise PermissionError("pysnip: ...")): it counts only
	 * beside a denial the hook itself recorded. */
	return msg && !strncmp(msg, "pysnip: ", 8) && cJSON_GetArraySize(rep->denials) > 0;
}

/* The errno of an uncaught OSError (pyshim reads OSError's own slot), or 0. */
static int exc_errno(const struct report *rep)
{
	cJSON *e = rep->exception ? cJSON_GetObjectItemCaseSensitive(rep->exception, "errno") : NULL;

	return cJSON_IsNumber(e) ? e->valueint : 0;
}

/* The kernel layer whose answer ended the snippet, the Python layer having said nothing:
 * EACCES with Landlock held is Landlock's (it says EACCES for every file right it denies);
 * EROFS in a mount namespace of ours is the read-only view outside scratch (namespaces.c).
 * NULL: an ordinary error. errno comes from OSError's slot; a bare PermissionError("...")
 * of the snippet's has none. */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n && !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* Would the file's mode bits let the run's uid/gid read it? (The DAC check, which the
 * kernel makes before Landlock's.) true when unknown: nothing to blame the uid for. Not
 * root, the run has our own uid, and we may sit in a user namespace where other owners
 * show as the overflow id (65534, nobody's own): ask the kernel for ourselves instead. */
static bool mode_lets_read(const char *path, const struct ps_held *h)
{
	struct stat st;

	if (geteuid() != 0)
		return faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0 || errno != EACCES;
	if (stat(path, &st) < 0 || h->uid == 0)
		return true;
	if ((uid_t)h->uid == st.st_uid)
		return st.st_mode & S_IRUSR;
	if ((gid_t)h->gid == st.st_gid)
		return st.st_mode & S_IRGRP;
	return st.st_mode & S_IROTH;
}

/* EACCES on a path: the snippet's own file (in scratch, or relative to the cwd, which starts
 * there) is no layer's doing; in a write path Landlock grants everything, so it was the uid;
 * elsewhere Landlock, unless the mode bits already refused the run's uid. */
static const char *eacces_layer(const struct report *rep, const struct ps_outcome *o,
				const struct ps_policy *p)
{
	const char *fn = exc_str(rep, "filename");

	if (!fn || fn[0] != '/' || path_under(fn, o->scratch))
		return NULL;
	for (size_t i = 0; p && i < p->write_paths.n; i++)
		if (path_under(fn, p->write_paths.items[i]))
			return o->held.uid ? "identity" : NULL;
	return mode_lets_read(fn, &o->held) ? "landlock" : "identity";
}

static const char *kernel_denial_layer(const struct report *rep, const struct ps_outcome *o,
				       const struct ps_policy *p)
{
	int err = exc_errno(rep);

	if (err == EACCES && exc_is(rep, "PermissionError") && o->held.landlock_abi)
		return eacces_layer(rep, o, p);
	if (err == EROFS && (o->held.namespaces & 0x00020000 /* CLONE_NEWNS */))
		return "namespaces";
	return NULL;
}

static bool exc_from_kernel_denial(const struct report *rep, const struct ps_outcome *o,
				   const struct ps_policy *p)
{
	return kernel_denial_layer(rep, o, p) != NULL;
}

static bool signaled(const struct ps_outcome *o, int sig)
{
	return o->reaped && WIFSIGNALED(o->wait_status) && WTERMSIG(o->wait_status) == sig;
}

/* The kernel killed the worker for a denied syscall: SIGSYS, with a filter loaded (held,
 * reported before the snippet ran). The worker ignores every SIGSYS but the filter's own
 * (seccomp.c), so a snippet raising SIGSYS never gets here; without a filter it is just a
 * signal. */
static bool seccomp_death(const struct ps_outcome *o)
{
	return signaled(o, SIGSYS) && o->have_held && o->held.seccomp != 0;
}

static uint64_t cpu_ms(const struct ps_outcome *o)
{
	const struct rusage *ru = &o->ru;

	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
}

static bool memory_exhausted(const struct ps_outcome *o, const struct report *rep,
			     uint64_t mem_limit)
{
	static const char *const marks[] = { "MemoryError", "Cannot allocate memory",
					     "out of memory" };

	if (rep->memory_error || exc_is(rep, "MemoryError") || o->cgroup_oom_kills)
		return true;
	/* An allocation the kernel refused under RLIMIT_AS surfaces as OSError(ENOMEM) from
	 * mmap or a C library call, not as MemoryError. */
	if (mem_limit && exc_errno(rep) == ENOMEM)
		return true;
	/* CPython failing an allocation deep inside (a frame for a runaway recursion) may raise
	 * SystemError instead of MemoryError: count it when the run was at its memory limit. */
	if (exc_is(rep, "SystemError") && mem_limit &&
	    (uint64_t)o->ru.ru_maxrss * 1024 * 10 >= mem_limit * 8)
		return true;
	if (!(signaled(o, SIGSEGV) || signaled(o, SIGABRT) || signaled(o, SIGBUS) ||
	      (o->reaped && WIFEXITED(o->wait_status) && !rep->finished)))
		return false;
	for (size_t i = 0; i < PS_ARRAY_LEN(marks); i++)
		if (o->err.buf && memmem(o->err.buf, o->err.len, marks[i], strlen(marks[i])))
			return true;
	return false;
}

static enum ps_status classify(const struct ps_policy *p, const struct ps_run *r,
			       const struct ps_outcome *o, const struct report *rep)
{
	uint64_t cpu_cap = (r->limits.cpu_ms + 999) / 1000 * 1000;

	if (o->host_error[0] || o->phase_failed || !o->reaped)
		return PS_STATUS_INTERNAL_ERROR;
	if (o->timed_out)
		return PS_STATUS_TIMEOUT;
	if (o->output_capped || o->report_capped)
		return PS_STATUS_OUTPUT_LIMIT;
	if (seccomp_death(o))
		return PS_STATUS_DENIED;
	/* RLIMIT_CPU's hard limit is a SIGKILL from the kernel, decided on the tick-sampled CPU
	 * clock, which the parent read before the reap (rusage's precise runtime reads 5-15%
	 * under it here); nobody else killed it (we flag our own kills). Without that clock,
	 * rusage with a margin. */
	if (signaled(o, SIGXCPU) ||
	    (signaled(o, SIGKILL) && (o->cpu_clock_read ? o->cpu_clock_us >= cpu_cap * 1000
						      : cpu_ms(o) * 10 >= cpu_cap * 9)))
		return PS_STATUS_CPU_LIMIT;
	if (memory_exhausted(o, rep, r->limits.memory_bytes))
		return PS_STATUS_MEMORY_LIMIT;
	if (exc_from_sandbox(rep) || exc_from_kernel_denial(rep, o, p))
		return PS_STATUS_DENIED;
	if (rep->exception)
		return PS_STATUS_EXCEPTION;
	if (WIFSIGNALED(o->wait_status))
		return PS_STATUS_SIGNAL;
	/* No report but a normal exit: the snippet left through os._exit; exit_code says how. */
	return PS_STATUS_OK;
}

/* --- rendering --- */

/* Microseconds as milliseconds, the text cJSON prints for us / 1000.0 ("8.21", "0.643",
 * "5"), without the sprintf and sscanf round trip it makes for every fractional number. */
static void add_ms(cJSON *o, const char *key, uint64_t us)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%" PRIu64 ".%03u", us / 1000, (unsigned)(us % 1000));

	while (num[n - 1] == '0')
		num[--n] = '\0';
	if (num[n - 1] == '.')
		num[--n] = '\0';
	cJSON_AddRawToObject(o, key, num);
}

static cJSON *usage_json(const struct ps_outcome *o)
{
	cJSON *u = cJSON_CreateObject();
	const struct rusage *ru = &o->ru;

	add_ms(u, "wall_ms", o->wall_us);
	cJSON_AddNumberToObject(u, "cpu_ms", (double)cpu_ms(o));
	cJSON_AddNumberToObject(u, "user_ms", (double)ru->ru_utime.tv_sec * 1000 +
						  (double)(ru->ru_utime.tv_usec / 1000));
	cJSON_AddNumberToObject(u, "sys_ms", (double)ru->ru_stime.tv_sec * 1000 +
						 (double)(ru->ru_stime.tv_usec / 1000));
	cJSON_AddNumberToObject(u, "max_rss_kb", (double)ru->ru_maxrss);
	/* wall_ms split: the sandbox's set-up (interpreter start in one-shot runs, every phase)
	 * and the snippet's own run up to the worker's exit */
	add_ms(u, "setup_ms", o->setup_us);
	add_ms(u, "run_ms", o->run_us);
	/* the CPU time RLIMIT_CPU counted (tick-sampled), where the parent could read it */
	if (o->cpu_clock_read)
		add_ms(u, "cpu_clock_ms", o->cpu_clock_us);
	if (o->cgroup_used)
		cJSON_AddNumberToObject(u, "memory_peak_kb", (double)(o->cgroup_memory_peak / 1024));
	return u;
}

static cJSON *layer_list(uint32_t mask)
{
	cJSON *a = cJSON_CreateArray();

	for (int l = 0; l < PS_LAYER_COUNT; l++)
		if (mask & (1u << l))
			cJSON_AddItemToArray(a, cJSON_CreateString(ps_layer_name((enum ps_layer)l)));
	return a;
}

static const struct {
	uint32_t bit;
	const char *name;
} ns_names[] = {
	{ 0x10000000 /* CLONE_NEWUSER */, "user" }, { 0x40000000 /* CLONE_NEWNET */, "net" },
	{ 0x20000000 /* CLONE_NEWPID */, "pid" },   { 0x08000000 /* CLONE_NEWIPC */, "ipc" },
	{ 0x04000000 /* CLONE_NEWUTS */, "uts" },   { 0x00020000 /* CLONE_NEWNS */, "mount" },
};

static cJSON *sandbox_json(const struct ps_outcome *o)
{
	const struct ps_held *h = &o->held;
	cJSON *s = cJSON_CreateObject(), *ns = cJSON_CreateArray();
	bool known = o->have_held || o->phase_failed;

	cJSON_AddBoolToObject(s, "applied", o->have_held);
	if (known) {
		cJSON_AddNumberToObject(s, "uid", h->uid);
		cJSON_AddNumberToObject(s, "gid", h->gid);
	} else {
		cJSON_AddNullToObject(s, "uid");
		cJSON_AddNullToObject(s, "gid");
	}
	cJSON_AddBoolToObject(s, "python", !(h->layers_off & (1u << PS_LAYER_PYTHON)) && known);
	cJSON_AddStringToObject(s, "capabilities", h->caps_cleared ? "none" : "kept");
	cJSON_AddBoolToObject(s, "no_new_privs", h->no_new_privs);
	cJSON_AddBoolToObject(s, "dumpable", !h->not_dumpable);
	cJSON_AddStringToObject(s, "seccomp", h->seccomp ? ps_seccomp_action_name(
								  (enum ps_seccomp_action)(h->seccomp - 1))
							: "off");
	cJSON_AddNumberToObject(s, "landlock_abi", h->landlock_abi);
	for (size_t i = 0; i < PS_ARRAY_LEN(ns_names); i++)
		if (h->namespaces & ns_names[i].bit)
			cJSON_AddItemToArray(ns, cJSON_CreateString(ns_names[i].name));
	cJSON_AddItemToObject(s, "namespaces", ns);
	cJSON_AddStringToObject(s, "cgroup", h->cgroup ? "per-run" : "none (limits from rlimits)");
	cJSON_AddStringToObject(s, "scratch", h->scratch_capped ? "tmpfs" : "directory");
	cJSON_AddItemToObject(s, "layers_off", layer_list(h->layers_off));
	cJSON_AddItemToObject(s, "layers_degraded", layer_list(h->layers_degraded));
	return s;
}

/* Copy the report's denials, keeping only well-formed entries; add the filter's own. */
static cJSON *denials_json(const struct ps_policy *p, const struct ps_outcome *o,
			   const struct report *rep, enum ps_status st)
{
	cJSON *out = cJSON_CreateArray(), *d;

	cJSON_ArrayForEach(d, rep->denials)
	{
		cJSON *layer = cJSON_GetObjectItemCaseSensitive(d, "layer");
		cJSON *event = cJSON_GetObjectItemCaseSensitive(d, "event");

		if (cJSON_IsString(layer) && cJSON_IsString(event))
			cJSON_AddItemToArray(out, cJSON_Duplicate(d, true));
	}
	if (seccomp_death(o)) {
		const char *name = o->have_syscall
					   ? ps_syscall_name_arch(o->syscall_nr, o->syscall_arch)
					   : NULL;
		char buf[48];

		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "layer", "seccomp");
		if (!name) {
			snprintf(buf, sizeof(buf), o->have_syscall ? "syscall %d" : "unknown syscall",
				 o->syscall_nr);
			name = buf;
		}
		cJSON_AddStringToObject(d, "event", name);
		if (o->have_syscall)
			cJSON_AddNumberToObject(d, "syscall", o->syscall_nr);
		cJSON_AddStringToObject(d, "detail", "system call not in the policy's allowlist");
		cJSON_AddNullToObject(d, "line");
		cJSON_AddItemToArray(out, d);
	} else if (st == PS_STATUS_DENIED && cJSON_GetArraySize(out) == 0) {
		const char *fn = exc_str(rep, "filename");
		const char *layer = kernel_denial_layer(rep, o, p);
		cJSON *line;

		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "layer", layer ? layer : "landlock");
		cJSON_AddStringToObject(d, "event", "filesystem");
		cJSON_AddStringToObject(d, "detail", fn ? fn : exc_str(rep, "message"));
		line = rep->exception ? cJSON_GetObjectItemCaseSensitive(rep->exception, "line") : NULL;
		if (cJSON_IsNumber(line))
			cJSON_AddNumberToObject(d, "line", line->valuedouble);
		else
			cJSON_AddNullToObject(d, "line");
		cJSON_AddItemToArray(out, d);
	}
	return out;
}

static void add_exit(cJSON *v, const struct ps_outcome *o)
{
	if (o->reaped && WIFEXITED(o->wait_status))
		cJSON_AddNumberToObject(v, "exit_code", WEXITSTATUS(o->wait_status));
	else
		cJSON_AddNullToObject(v, "exit_code");
	if (o->reaped && WIFSIGNALED(o->wait_status)) {
		int sig = WTERMSIG(o->wait_status);
		const char *abbrev = sigabbrev_np(sig);
		char name[32];

		cJSON_AddNumberToObject(v, "signal", sig);
		snprintf(name, sizeof(name), "SIG%s", abbrev ? abbrev : "?");
		cJSON_AddStringToObject(v, "signal_name", name);
	} else {
		cJSON_AddNullToObject(v, "signal");
	}
}

static char *finish(cJSON *v, bool pretty)
{
	char *s = pretty ? cJSON_Print(v) : cJSON_PrintUnformatted(v);

	cJSON_Delete(v);
	return s;
}

static cJSON *verdict_head(const struct ps_policy *p, enum ps_status st)
{
	cJSON *v = cJSON_CreateObject();

	cJSON_AddNumberToObject(v, "version", PS_VERDICT_VERSION);
	cJSON_AddStringToObject(v, "status", ps_status_name(st));
	cJSON_AddStringToObject(v, "policy", p && p->name ? p->name : "");
	return v;
}

static void add_limits(cJSON *v, const struct ps_limits *l)
{
	cJSON *o = ps_limits_to_cjson(l);

	cJSON_AddItemToObject(v, "limits", o ? o : cJSON_CreateObject());
}

/* The run's rich outputs (pyshim/display.py), in order: Jupyter MIME bundles, each an object
 * with a "data" object (mime -> string or JSON) and a "metadata" object; anything else in the
 * report is dropped. Their text counts against the output cap with stdout and stderr: past
 * it, the bundles that do not fit are left out and the run is over its output limit. */
static bool add_display(cJSON *v, const struct ps_run *r, const struct ps_outcome *o,
			const struct report *rep)
{
	const cJSON *shown = rep->root ? cJSON_GetObjectItemCaseSensitive(rep->root, "display") : NULL;
	cJSON *out = cJSON_CreateArray();
	uint64_t used = o->out.len + o->err.len;
	bool over = false;
	const cJSON *b;

	cJSON_ArrayForEach(b, shown) {
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(b, "data");
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(b, "metadata");
		const cJSON *e;
		cJSON *nb;
		uint64_t size = 0;

		if (!cJSON_IsObject(data) || over)
			continue;
		/* display.py already left it out: the run went over the cap there */
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "truncated"))) {
			over = true;
			continue;
		}
		cJSON_ArrayForEach(e, data)
			size += cJSON_IsString(e) ? strlen(e->valuestring) : 64;
		if (used + size > r->limits.output_bytes) {
			over = true;
			continue;
		}
		used += size;
		nb = cJSON_CreateObject();
		if (!nb)
			break;
		cJSON_AddItemToObject(nb, "data", cJSON_Duplicate(data, true));
		cJSON_AddItemToObject(nb, "metadata", cJSON_IsObject(md) ? cJSON_Duplicate(md, true)
									: cJSON_CreateObject());
		cJSON_AddItemToArray(out, nb);
	}
	cJSON_AddItemToObject(v, "display", out);
	return over;
}

/* What the run left in output/ (outfiles.c): listed always; their bytes over HTTP. */
static void add_files(cJSON *v, const struct ps_run *r, const struct report *rep,
		      struct ps_outfiles *keep)
{
	struct ps_outfiles f;

	if (ps_outfiles_take(rep->root, &r->limits, &f) < 0) {
		ps_outfiles_free(&f);
		memset(&f, 0, sizeof(f));
	}
	cJSON_AddItemToObject(v, "files", ps_outfiles_json(&f, r->files_content));
	cJSON_AddItemToObject(v, "files_refused", ps_outfiles_refused_json(&f));
	if (keep)
		*keep = f;
	else
		ps_outfiles_free(&f);
}

char *ps_verdict_render(const struct ps_policy *p, const struct ps_run *r,
			const struct ps_outcome *o, bool pretty)
{
	return ps_verdict_render_files(p, r, o, pretty, NULL);
}

char *ps_verdict_render_files(const struct ps_policy *p, const struct ps_run *r,
			      const struct ps_outcome *o, bool pretty, struct ps_outfiles *files)
{
	struct report rep;
	enum ps_status st;
	cJSON *v;

	report_parse(o, &rep);
	st = classify(p, r, o, &rep);
	v = verdict_head(p, st);
	add_exit(v, o);
	add_bytes(v, "stdout", &o->out);
	add_bytes(v, "stderr", &o->err);
	cJSON_AddBoolToObject(v, "truncated", o->out.truncated || o->err.truncated);
	if (rep.exception)
		cJSON_AddItemToObject(v, "exception", cJSON_Duplicate(rep.exception, true));
	else
		cJSON_AddNullToObject(v, "exception");
	cJSON_AddItemToObject(v, "denials", denials_json(p, o, &rep, st));
	cJSON_AddItemToObject(v, "usage", usage_json(o));
	add_limits(v, &r->limits);
	cJSON_AddItemToObject(v, "sandbox", sandbox_json(o));
	add_files(v, r, &rep, files);
	if (add_display(v, r, o, &rep) && (st == PS_STATUS_OK || st == PS_STATUS_EXCEPTION)) {
		st = PS_STATUS_OUTPUT_LIMIT;
		cJSON_ReplaceItemInObjectCaseSensitive(v, "status",
						       cJSON_CreateString(ps_status_name(st)));
		cJSON_ReplaceItemInObjectCaseSensitive(v, "truncated", cJSON_CreateTrue());
	}
	if (st == PS_STATUS_INTERNAL_ERROR) {
		char msg[512];

		if (o->phase_failed)
			snprintf(msg, sizeof(msg), "worker phase %s: %s", o->phase_name, o->phase_msg);
		else
			snprintf(msg, sizeof(msg), "%s",
				 o->host_error[0] ? o->host_error : "worker ended without a verdict");
		cJSON_AddStringToObject(v, "error", msg);
	}
	cJSON_Delete(rep.root);
	return finish(v, pretty);
}

char *ps_verdict_internal_error(const struct ps_policy *p, const char *message, bool pretty)
{
	cJSON *v = verdict_head(p, PS_STATUS_INTERNAL_ERROR);

	cJSON_AddNullToObject(v, "exit_code");
	cJSON_AddNullToObject(v, "signal");
	cJSON_AddStringToObject(v, "stdout", "");
	cJSON_AddStringToObject(v, "stderr", "");
	cJSON_AddBoolToObject(v, "truncated", false);
	cJSON_AddNullToObject(v, "exception");
	cJSON_AddItemToObject(v, "denials", cJSON_CreateArray());
	cJSON_AddStringToObject(v, "error", message);
	return finish(v, pretty);
}
