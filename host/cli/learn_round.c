/* One round of `pysnip learn`: the snippet under a policy, every layer on but the seccomp
 * filter reporting (SECCOMP_RET_USER_NOTIF, answered by sandbox/notify.c) instead of
 * killing. Each round runs in a process of its own (forked, single-threaded at the fork),
 * which sets up namespaces and the worker exactly as `pysnip exec` does and sends back the
 * verdict and the syscalls it saw on a pipe; so rounds never share state. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "learn.h"
#include "python/interp.h"
#include "run/result.h"
#include "run/worker.h"
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

/* The runner, in a process of its own: load, run with the learning filter, print the
 * verdict. Returns the verdict's JSON text (malloc'd), or NULL with err. */
static char *runner(const char *policy, const struct ps_learn_input *in, struct ps_notify *n,
		    char *err, size_t errlen)
{
	struct ps_policy p;
	struct ps_strlist modules = { 0 };
	struct ps_interp_opts io = { 0 };
	struct ps_run r = { 0 };
	struct ps_worker w;
	struct ps_outcome out;
	char *verdict = NULL;
	int ret;

	if (ps_policy_load(policy, &p, err, errlen) < 0)
		return NULL;
	p.seccomp_learn = true;
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
	if (!verdict)
		snprintf(err, errlen, "learn: rendering the verdict: out of memory");
	ps_outcome_free(&out);
	ps_worker_release(&w);
out:
	ps_strlist_free(&modules);
	ps_policy_free(&p);
	return verdict;
}

__attribute__((noreturn)) static void runner_main(const char *policy,
						   const struct ps_learn_input *in,
						   struct ps_notify *n, bool learning, int out)
{
	char err[512] = "";
	char *text;

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

static cJSON *round_json(char *verdict, const struct ps_notify_report *rep, bool learning)
{
	cJSON *root = cJSON_CreateObject();

	if (!root)
		return NULL;
	cJSON_AddItemToObject(root, "verdict", cJSON_Parse(verdict));
	cJSON_AddItemToObject(root, "syscalls", seen_json(rep));
	cJSON_AddBoolToObject(root, "threads", rep->threads);
	cJSON_AddBoolToObject(root, "listener", rep->got_listener || !learning);
	return root;
}

int ps_learn_round(const char *policy, const struct ps_learn_input *in, struct cJSON **out,
		   char *err, size_t errlen)
{
	bool learning = !(in->layers_off & (1u << PS_LAYER_SECCOMP));
	struct ps_notify *n = NULL;
	int fds[2], status, rc;
	char *buf = NULL;
	size_t len = 0;
	pid_t pid;

	*out = NULL;
	if ((rc = ps_notify_new(&n)) < 0 || pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "learn: %s: %s", rc < 0 ? "socketpair(uplink)" : "pipe2()",
			 strerror(rc < 0 ? -rc : errno));
		ps_notify_free(n);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		runner_main(policy, in, n, learning, fds[1]);
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
