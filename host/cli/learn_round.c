/* One round of `pysnip learn`: the snippet under a policy, every layer on but the seccomp
 * filter reporting (SECCOMP_RET_USER_NOTIF, answered by sandbox/notify.c) instead of
 * killing. Each round runs in a process of its own (forked, single-threaded at the fork),
 * which sets up namespaces and the worker exactly as `pysnip exec` does and sends back the
 * verdict and the syscalls it saw on a pipe; so rounds never share state. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "learn.h"
#include "python/interp.h"
#include "run/result.h"
#include "run/worker.h"
#include "sandbox/syscall_groups.h"
#include "util/util.h"

enum { ROUND_OUT_MAX = 64 << 20 };

static cJSON *seen_json(const struct ps_notify_report *rep)
{
	cJSON *a = cJSON_CreateArray();

	for (int nr = 0; a && nr < PS_NOTIFY_MAX_NR; nr++) {
		cJSON *o;

		if (!rep->count[nr] || !(o = cJSON_CreateObject()))
			continue;
		cJSON_AddStringToObject(o, "name", ps_syscall_name(nr));
		cJSON_AddNumberToObject(o, "nr", nr);
		cJSON_AddNumberToObject(o, "count", rep->count[nr]);
		cJSON_AddStringToObject(o, "refused", rep->refused[nr] == PS_NOTIFY_NEVER ? "never"
						     : rep->refused[nr] == PS_NOTIFY_ARGS ? "arguments"
											  : "");
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* ---- learn via SCMP_ACT_LOG: the kernel's audit records of the worker ----
 *
 * With no audit daemon the kernel prints each one to its log ("audit: type=1326 ... pid=N
 * ... syscall=NR ... code=0x7ffc0000"); /dev/kmsg gives them one a read. Opened (at its end)
 * before the run, read to the end after it, keeping the worker's own. */

enum { AUDIT_SECCOMP = 1326, QUIET_MS = 50, KMSG_WAIT_MS = 1000 };

static int kmsg_open(char *err, size_t errlen)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 || lseek(fd, 0, SEEK_END) < 0) {
		snprintf(err, errlen, "learn via log: /dev/kmsg: %s (the kernel's audit records "
			 "are read there: root, or kernel.dmesg_restrict=0)", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* "key=NUMBER" in a record, base 0 (decimal or 0x...). */
static bool field(const char *rec, const char *key, unsigned long *out)
{
	const char *at = strstr(rec, key);
	char *end;

	if (!at || (at != rec && at[-1] != ' '))
		return false;
	*out = strtoul(at + strlen(key), &end, 0);
	return end != at + strlen(key);
}

static cJSON *kmsg_seen(int fd, pid_t pid)
{
	uint32_t count[PS_NOTIFY_MAX_NR] = { 0 };
	uint8_t refused[PS_NOTIFY_MAX_NR] = { 0 };
	struct ps_notify_report rep;
	uint64_t end = ps_now_us() + KMSG_WAIT_MS * 1000, last = ps_now_us();
	char rec[8192];
	ssize_t n;

	/* The kernel's audit thread prints the records a little after the calls: read until
	 * the log has been quiet for QUIET_MS, and at most KMSG_WAIT_MS in all (other
	 * processes' records may never stop). */
	while (ps_now_us() - last < QUIET_MS * 1000 && ps_now_us() < end) {
		unsigned long type, rpid, nr, code;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten before we read them */
		if (n <= 0) {
			usleep(10 * 1000);
			continue;
		}
		last = ps_now_us();
		rec[n] = '\0';
		if (!strstr(rec, "audit: type=") || !field(rec, "type=", &type) ||
		    type != AUDIT_SECCOMP || !field(rec, "pid=", &rpid) || rpid != (unsigned long)pid ||
		    !field(rec, "syscall=", &nr) || !field(rec, "code=", &code) ||
		    nr >= PS_NOTIFY_MAX_NR)
			continue;
		/* clone3 fails by pysnip's own rule (ENOSYS, so that libc falls back to clone);
		 * the record's code has the action only, not the errno */
		if ((code & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO && nr == __NR_clone3)
			continue;
		count[nr]++;
		if ((code & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_LOG) {
			const char *name = ps_syscall_name((int)nr);

			refused[nr] = ps_syscall_never_allowed(name) ? PS_NOTIFY_NEVER : PS_NOTIFY_ARGS;
		}
	}
	memset(&rep, 0, sizeof(rep));
	memcpy(rep.count, count, sizeof(count));
	memcpy(rep.refused, refused, sizeof(refused));
	return seen_json(&rep);
}

/* The runner, in a process of its own: load, run with the learning filter, print the
 * verdict (and in log mode what the kernel logged). Returns JSON text (malloc'd), or NULL
 * with err. */
static char *runner(const char *policy, const struct ps_learn_input *in, struct ps_notify *n,
		    char *err, size_t errlen)
{
	struct ps_policy p;
	struct ps_strlist modules = { 0 };
	struct ps_interp_opts io = { 0 };
	struct ps_run r = { 0 };
	struct ps_worker w;
	struct ps_outcome out;
	char *verdict = NULL, *text = NULL;
	int ret, kmsg = -1;
	cJSON *root;

	if (ps_policy_load(policy, &p, err, errlen) < 0)
		return NULL;
	p.seccomp_learn = (uint8_t)in->via;
	if (in->via == PS_LEARN_LOG && (kmsg = kmsg_open(err, errlen)) < 0)
		goto out;
	if (ps_policy_modules(&p, &modules, err, errlen) < 0 || ps_interp_locate(err, errlen) < 0)
		goto out;
	io.policy = &p;
	io.modules = &modules;
	io.python_layer = !(in->layers_off & (1u << PS_LAYER_PYTHON)) &&
			  p.layers[PS_LAYER_PYTHON] != PS_LAYER_OFF;
	if (ps_worker_prepare_oneshot(&w, &p, in->layers_off, &io, err, errlen) < 0)
		goto out;
	w.learn = n;
	r.code = in->code;
	r.code_len = in->code_len;
	r.stdin_data = in->stdin_data;
	r.stdin_len = in->stdin_len;
	r.limits = p.limits;
	ps_supervise_catch_signals();
	ret = ps_worker_run(&w, &r, &out);
	if (ret < 0 && !out.host_error[0])
		snprintf(out.host_error, sizeof(out.host_error), "worker: %s", strerror(-ret));
	verdict = ps_verdict_render(&p, &r, &out, false);
	root = verdict ? cJSON_CreateObject() : NULL;
	if (root) {
		cJSON_AddItemToObject(root, "verdict", cJSON_Parse(verdict));
		if (kmsg >= 0)
			cJSON_AddItemToObject(root, "logged", kmsg_seen(kmsg, out.pid));
		text = cJSON_PrintUnformatted(root);
		cJSON_Delete(root);
	}
	free(verdict);
	if (!text)
		snprintf(err, errlen, "learn: rendering the verdict: out of memory");
	ps_outcome_free(&out);
	ps_worker_release(&w);
out:
	if (kmsg >= 0)
		close(kmsg);
	ps_strlist_free(&modules);
	ps_policy_free(&p);
	return text;
}

__attribute__((noreturn)) static void runner_main(const char *policy,
						   const struct ps_learn_input *in,
						   struct ps_notify *n, bool learning, pid_t parent,
						   int out)
{
	char err[512] = "";
	char *text;

	/* learn's end is the round's end: the runner goes, and with it its worker (PDEATHSIG) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	ps_notify_runner_side(n);
	text = runner(policy, in, learning ? n : NULL, err, sizeof(err));
	if (!text) {
		(void)!write(out, "E", 1);
		(void)ps_write_all(out, err, strlen(err));
	} else {
		(void)ps_write_all(out, text, strlen(text));
	}
	_exit(0);
}

/* The supervisor's loop: answer notifications and gather the runner's output until both
 * are over. The runner's wall clock bounds the worker; its exit ends the rest. */
static int supervise(struct ps_notify *n, int pipe_fd, char **buf, size_t *len)
{
	size_t cap = 0;
	bool open = true;

	*buf = NULL;
	*len = 0;
	while (open || ps_notify_fd(n) >= 0) {
		struct pollfd p[2] = { { pipe_fd, POLLIN, 0 }, { ps_notify_fd(n), POLLIN, 0 } };
		int rc = poll(p, 2, open ? -1 : 10000);

		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;	/* the runner is gone; its worker should be too */
		if (p[1].revents)
			ps_notify_step(n, p[1].revents);
		if (open && p[0].revents) {
			ssize_t got;

			if (*len + 65536 > cap) {
				char *nb = realloc(*buf, cap = cap * 2 + 65536);

				if (!nb)
					return -ENOMEM;
				*buf = nb;
			}
			got = read(pipe_fd, *buf + *len, cap - *len - 1);
			if (got <= 0 && !(got < 0 && errno == EINTR))
				open = false;
			else if (got > 0 && (*len += (size_t)got) > ROUND_OUT_MAX)
				return -EFBIG;
		}
	}
	if (*buf)
		(*buf)[*len] = '\0';
	return 0;
}

/* Log mode cannot see clone's flags: a thread is a logged clone that went on (the filter's
 * rule refuses a process with EPERM, which is logged as refused). */
static bool logged_thread(const cJSON *logged)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, logged) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "refused"));

		if (name && why && !strcmp(name, "clone") && !*why)
			return true;
	}
	return false;
}

/* The runner's {"verdict", "logged"?} with what the supervisor saw (or what was logged). */
static cJSON *round_json(char *text, const struct ps_notify_report *rep, bool notify)
{
	cJSON *root = cJSON_Parse(text), *logged;

	if (!root)
		return NULL;
	logged = cJSON_DetachItemFromObjectCaseSensitive(root, "logged");
	cJSON_AddItemToObject(root, "syscalls", logged ? logged : seen_json(rep));
	cJSON_AddBoolToObject(root, "threads", rep->threads || logged_thread(logged));
	cJSON_AddBoolToObject(root, "listener", rep->got_listener || !notify);
	return root;
}

int ps_learn_round(const char *policy, const struct ps_learn_input *in, struct cJSON **out,
		   char *err, size_t errlen)
{
	bool learning = !(in->layers_off & (1u << PS_LAYER_SECCOMP)) && in->via == PS_LEARN_NOTIFY;
	struct ps_notify *n = NULL;
	int fds[2], status, rc;
	char *buf = NULL;
	size_t len = 0;
	pid_t pid, me;

	*out = NULL;
	if ((rc = ps_notify_new(&n)) < 0 || pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "learn: %s: %s", rc < 0 ? "socketpair(uplink)" : "pipe2()",
			 strerror(rc < 0 ? -rc : errno));
		ps_notify_free(n);
		return -1;
	}
	fflush(NULL);
	me = getpid();
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		runner_main(policy, in, n, learning, me, fds[1]);
	}
	close(fds[1]);
	rc = pid < 0 ? -errno : 0;
	if (pid > 0) {
		ps_notify_supervisor_side(n);
		rc = supervise(n, fds[0], &buf, &len);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(fds[0]);
	if (rc < 0 || !len)
		snprintf(err, errlen, "learn: the round %s", rc < 0 ? strerror(-rc) : "said nothing");
	else if (buf[0] == 'E')
		snprintf(err, errlen, "%s", buf + 1);
	else if (!(*out = round_json(buf, ps_notify_report(n), learning)))
		snprintf(err, errlen, "learn: the round's result: out of memory");
	free(buf);
	ps_notify_free(n);
	return *out ? 0 : -1;
}
