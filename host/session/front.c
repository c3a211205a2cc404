/* The front's handle on a session (session.h): the session host is fork+exec'd with a
 * socket on its fd 3; requests and events are JSON lines (host.c). Thread-safe: one call at
 * a time per handle (mu), interrupts from any thread (wmu orders the writes). */
#include "session.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/policy.h"
#include "run/result.h"
#include "util/util.h"

enum { START_WAIT_MS = 60000 };

struct ps_session {
	pthread_mutex_t mu;	/* one exec/query/restart/info at a time */
	pthread_mutex_t wmu;	/* writes to fd */
	int fd;
	pid_t pid;
	int pidfd;
	char *buf;
	size_t len, cap;
	char ended[300];
	bool gone;
	char *verdict_text;	/* the last verdict line's "verdict" value, cut from its text */
	bool configuring;	/* a configure was sent whose answer is still to be read */
	pid_t host_pid;		/* the session host (also one the zygote forked), or -1 */
	bool host_pinned;	/* to the CPU of the last exec's thread (place_host) */
};

static unsigned execs_in_flight;	/* (atomic) in this process, every session's */

/* The session host's pid as our PID namespace names it: the pidfd's, which the zygote
 * handed us (its fdinfo says), or -1. */
static pid_t pid_of_pidfd(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	if (pidfd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4)) {
			pid = (pid_t)atoi(line + 4);
			break;
		}
	fclose(f);
	return pid > 0 ? pid : -1;
}

/* An exec alone in this process puts the session host on this thread's CPU: the host then
 * pins its cell there for the cell's start (host.c, ps_host_pin), and the command, the
 * report and the verdict pass within one CPU, where each wakeup is a switch rather than a
 * halted vCPU's wake-up. Beside other execs the host gets every CPU back (the scheduler's
 * spreading is worth more then). Not once the host is gone: its pid could be another's. */
static void place_host(struct ps_session *s, bool alone)
{
	struct pollfd p = { .fd = s->pidfd, .events = POLLIN };
	cpu_set_t all;

	if (s->host_pid <= 0 || (!alone && !s->host_pinned) || poll(&p, 1, 0) != 0 ||
	    sched_getaffinity(0, sizeof(all), &all) < 0)
		return;
	if (alone)
		s->host_pinned = ps_pin_here(s->host_pid, &all);
	else if (sched_setaffinity(s->host_pid, sizeof(all), &all) == 0)
		s->host_pinned = false;
}

static int send_line(struct ps_session *s, const char *line)
{
	int ret;

	pthread_mutex_lock(&s->wmu);
	ret = ps_write_line(s->fd, line, strlen(line));
	pthread_mutex_unlock(&s->wmu);
	return ret;
}

static int send_json(struct ps_session *s, cJSON *m)
{
	char *line = cJSON_PrintUnformatted(m);
	int ret = line ? send_line(s, line) : -ENOMEM;

	cJSON_Delete(m);
	free(line);
	return ret;
}

/* The next event line (malloc'd), or NULL when the host is gone. timeout_ms < 0: forever. */
static char *read_line(struct ps_session *s, int timeout_ms)
{
	for (;;) {
		char *nl = s->len ? memchr(s->buf, '\n', s->len) : NULL;

		if (nl) {
			size_t n = (size_t)(nl - s->buf);
			char *line = malloc(n + 1);

			if (line) {
				memcpy(line, s->buf, n);
				line[n] = '\0';
			}
			memmove(s->buf, nl + 1, s->len - n - 1);
			s->len -= n + 1;
			return line;
		}
		if (s->cap - s->len < 65536) {
			size_t cap = s->cap ? s->cap * 2 : 1 << 16;
			char *nb = realloc(s->buf, cap);

			if (!nb)
				return NULL;
			s->buf = nb;
			s->cap = cap;
		}
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		int pr = poll(&p, 1, timeout_ms);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return NULL;
		ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			s->gone = true;
			return NULL;
		}
		s->len += (size_t)r;
	}
}

static const char *str_of(const cJSON *m, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An event every call may meet: the session ended. */
static bool note_ended(struct ps_session *s, const cJSON *m, char *err, size_t errlen)
{
	const char *ev = str_of(m, "event");

	if (!ev || strcmp(ev, "ended"))
		return false;
	snprintf(s->ended, sizeof(s->ended), "%s", str_of(m, "reason") ?: "ended");
	snprintf(err, errlen, "session ended: %s", s->ended);
	return true;
}

static void set_gone(struct ps_session *s, char *err, size_t errlen)
{
	if (!s->ended[0])
		snprintf(s->ended, sizeof(s->ended), "the session host exited");
	snprintf(err, errlen, "session ended: %s", s->ended);
}

static int build_argv(const struct ps_session_opts *o, char **argv, char bufs[][64], size_t max)
{
	const struct {
		const char *flag;
		const char *value;
	} str[] = { { "--policy", o->policy }, { "--wall", o->wall }, { "--cpu", o->cpu },
		    { "--memory", o->memory }, { "--output", o->output } };
	const struct {
		const char *flag;
		uint64_t v;
	} num[] = { { "--idle", o->session.idle_ms }, { "--lifetime", o->session.lifetime_ms },
		    { "--session-cpu", o->session.cpu_ms }, { "--cells", o->session.cells } };
	size_t n = 2, b = 0;

	for (size_t i = 0; i < PS_ARRAY_LEN(str); i++)
		if (str[i].value && n + 2 < max) {
			argv[n++] = (char *)str[i].flag;
			argv[n++] = (char *)str[i].value;
		}
	for (size_t i = 0; i < PS_ARRAY_LEN(num); i++)
		if (num[i].v && n + 2 < max) {
			snprintf(bufs[b], 64, "%llu%s", (unsigned long long)num[i].v,
				 strcmp(num[i].flag, "--cells") ? "ms" : "");
			argv[n++] = (char *)num[i].flag;
			argv[n++] = bufs[b++];
		}
	for (int l = 0; l < PS_LAYER_COUNT; l++)
		if ((o->layers_off & (1u << l)) && n + 2 < max) {
			argv[n++] = "--disable-layer";
			argv[n++] = (char *)ps_layer_name((enum ps_layer)l);
		}
	if (o->slot >= 0 && n + 2 < max) {
		snprintf(bufs[b], 64, "%d", o->slot);
		argv[n++] = "--slot";
		argv[n++] = bufs[b++];
	}
	argv[n] = NULL;
	return 0;
}

/* The session host's first line: ready, or why it could not start. */
/* A host line as JSON. Output that is not UTF-8 comes as \udcXX escapes (surrogateescape,
 * as in every verdict), which cJSON refuses as lone surrogates: parsed again with U+FFFD in
 * their place (the verdict's own text is taken from the raw line, escapes kept). */
static cJSON *parse_line(const char *line)
{
	cJSON *m = cJSON_Parse(line);
	char *copy, *p;

	if (m || !strstr(line, "\\udc") || !(copy = strdup(line)))
		return m;
	for (p = copy; (p = strstr(p, "\\udc")) != NULL; p += 2) {
		size_t before = 0;

		while (p - before > copy && p[-(ptrdiff_t)before - 1] == '\\')
			before++;
		if (before % 2 == 0 && p[4] && p[5])	/* an escape, not an escaped backslash */
			memcpy(p + 2, "fffd", 4);
	}
	m = cJSON_Parse(copy);
	free(copy);
	return m;
}

static int await_ready(struct ps_session *s, char *err, size_t errlen)
{
	char *line = read_line(s, START_WAIT_MS);
	cJSON *m = line ? parse_line(line) : NULL;

	free(line);
	if (!m || strcmp(str_of(m, "event") ?: "", "ready")) {
		const char *msg = m ? str_of(m, "message") : NULL;
		bool usage = m && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "usage"));

		snprintf(err, errlen, "%s%s", usage && msg && strncmp(msg, "policy ", 7) ? "policy " : "",
			 msg ? msg : "the session host did not start (execv of pysnip session-host?)");
		cJSON_Delete(m);
		return -1;
	}
	cJSON_Delete(m);
	return 0;
}

static struct ps_session *handle_new(int fd)
{
	struct ps_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->wmu, NULL);
	s->fd = fd;
	s->pidfd = -1;
	s->pid = -1;
	s->host_pid = -1;
	return s;
}

int ps_session_adopt(int fd, int pidfd, struct ps_session **out, char *err, size_t errlen)
{
	struct ps_session *s = handle_new(fd);

	*out = NULL;
	if (!s) {
		close(fd);
		if (pidfd >= 0)
			close(pidfd);
		snprintf(err, errlen, "session: out of memory");
		return -1;
	}
	s->pidfd = pidfd;
	s->host_pid = pid_of_pidfd(pidfd);
	if (await_ready(s, err, errlen) < 0) {
		ps_session_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

int ps_session_start(const struct ps_session_opts *o, struct ps_session **out, char *err,
		     size_t errlen)
{
	char exe[4200], bufs[8][64];
	char *argv[40];
	int sv[2], nul;
	struct ps_session *s;

	*out = NULL;
	snprintf(exe, sizeof(exe), "%s", o->exe ? o->exe : "");
	if (!o->exe)
		snprintf(exe, sizeof(exe), "%s/pysnip", ps_exe_dir());
	argv[0] = "pysnip";
	argv[1] = "session-host";
	build_argv(o, argv, bufs, PS_ARRAY_LEN(argv));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair(): %s", strerror(errno));
		return -1;
	}
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	s = handle_new(sv[0]);
	if (!s || nul < 0) {
		snprintf(err, errlen, "session: %s", !s ? "out of memory" : strerror(errno));
		goto fail;
	}
	/* a threaded front: only async-signal-safe calls between fork and exec */
	s->pid = fork();
	if (s->pid < 0) {
		snprintf(err, errlen, "fork(): %s", strerror(errno));
		goto fail;
	}
	if (s->pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(sv[1], 3) < 0)
			_exit(127);
		syscall(SYS_close_range, 4, ~0U, 0);
		execv(exe, argv);
		_exit(127);
	}
	close(sv[1]);
	close(nul);
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	s->host_pid = s->pid;
	if (await_ready(s, err, errlen) < 0) {
		ps_session_close(s);
		return -1;
	}
	*out = s;
	return 0;
fail:
	close(sv[0]);
	close(sv[1]);
	if (nul >= 0)
		close(nul);
	free(s);
	return -1;
}

static void on_input(struct ps_session *s, const cJSON *m, const struct ps_session_cb *cb)
{
	const char *prompt = str_of(m, "prompt") ?: "";
	bool pw = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "password"));
	char *line = cb && cb->input ? cb->input(cb->ctx, prompt, pw) : NULL;
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "op", "input");
	if (line)
		cJSON_AddStringToObject(a, "value", line);
	else
		cJSON_AddNullToObject(a, "value");
	free(line);
	send_json(s, a);
}

static cJSON *await_event(struct ps_session *s, const char *want, const struct ps_session_cb *cb,
			  char *err, size_t errlen);

/* The answer to a configure sent ahead (ps_session_configure does not wait for it): the
 * host answers in order, so it comes before the answer to anything sent after it. */
static int settle_configure(struct ps_session *s, char *err, size_t errlen)
{
	cJSON *m;

	if (!s->configuring)
		return 0;
	s->configuring = false;
	m = await_event(s, "configured", NULL, err, errlen);
	if (!m) {
		if (strncmp(err, "session ended", 13)) {
			char why[300];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "session configure: %s", why);
		}
		return -1;
	}
	cJSON_Delete(m);
	return 0;
}

/* Events until the one that ends the request (event == want): its line, malloc'd. */
static cJSON *await_event(struct ps_session *s, const char *want, const struct ps_session_cb *cb,
			  char *err, size_t errlen)
{
	if (settle_configure(s, err, errlen) < 0)
		return NULL;
	for (;;) {
		char *line = read_line(s, -1);
		cJSON *m = line ? parse_line(line) : NULL;
		const char *ev = m ? str_of(m, "event") : NULL;

		if (!line) {
			set_gone(s, err, errlen);
			return NULL;
		}
		if (!ev) {
			free(line);
			cJSON_Delete(m);
			continue;
		}
		if (!strcmp(ev, want)) {
			/* the host writes "verdict" last: {"event":..,"verdict":{...}} */
			char *at = strstr(line, ",\"verdict\":{");
			size_t n = strlen(line);

			free(s->verdict_text);
			s->verdict_text = at && n > 2 && line[n - 1] == '}' ?
				strndup(at + 11, (size_t)(line + n - 1 - (at + 11))) : NULL;
			free(line);
			return m;
		}
		if (!strcmp(ev, "stream") && cb && cb->stream) {
			/* the bytes as the cell wrote them, from the line's own text (cJSON's
			 * string has U+FFFD for each byte that was not UTF-8, and a character
			 * split across two writes is two such bytes) */
			const char *name = str_of(m, "name"), *q = strstr(line, ",\"text\":\"");
			size_t n = 0;
			char *bytes = q ? ps_json_unquote_bytes(q + 8, &n) : NULL;

			if (name && bytes)
				cb->stream(cb->ctx, name, bytes, n);
			free(bytes);
		}
		free(line);
		if (note_ended(s, m, err, errlen)) {
			cJSON_Delete(m);
			return NULL;
		}
		if (!strcmp(ev, "error")) {
			snprintf(err, errlen, "%s", str_of(m, "message") ?: "error");
			cJSON_Delete(m);
			return NULL;
		}
		if (!strcmp(ev, "stream")) {
			/* passed on above */
		} else if (!strcmp(ev, "input_request")) {
			on_input(s, m, cb);
		} else if (!strcmp(ev, "display") && cb && cb->display) {
			char *b = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(m, "bundle"));

			if (b)
				cb->display(cb->ctx, b);
			free(b);
		}
		cJSON_Delete(m);
	}
}

char *ps_session_exec(struct ps_session *s, const char *code, size_t len, const char *limits_json,
		      const struct ps_session_cb *cb, char *err, size_t errlen)
{
	cJSON *req, *lim = NULL, *m;
	char *out = NULL, *c;

	if (limits_json && !(lim = cJSON_Parse(limits_json))) {
		snprintf(err, errlen, "limits: not valid JSON");
		return NULL;
	}
	c = malloc(len + 1);
	if (!c) {
		cJSON_Delete(lim);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(c, code, len);
	c[len] = '\0';
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "exec");
	cJSON_AddStringToObject(req, "code", c);
	free(c);
	cJSON_AddItemToObject(req, "limits", lim ? lim : cJSON_CreateNull());
	pthread_mutex_lock(&s->mu);
	if (s->ended[0] || s->gone) {
		cJSON_Delete(req);
		set_gone(s, err, errlen);
		goto out;
	}
	bool alone = __atomic_fetch_add(&execs_in_flight, 1, __ATOMIC_RELAXED) == 0;

	place_host(s, alone);
	if (send_json(s, req) < 0) {
		__atomic_fetch_sub(&execs_in_flight, 1, __ATOMIC_RELAXED);
		set_gone(s, err, errlen);
		goto out;
	}
	m = await_event(s, "verdict", cb, err, errlen);
	__atomic_fetch_sub(&execs_in_flight, 1, __ATOMIC_RELAXED);
	if (m) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "verdict");
		const char *over = str_of(m, "session_ended");

		if (over)	/* this cell used up a session limit */
			snprintf(s->ended, sizeof(s->ended), "%s", over);
		out = s->verdict_text;	/* the verdict's own text, as the host wrote it */
		s->verdict_text = NULL;
		if (!out)
			out = cJSON_PrintUnformatted(v);
		cJSON_Delete(m);
	}
out:
	pthread_mutex_unlock(&s->mu);
	return out;
}

int ps_session_interrupt(struct ps_session *s)
{
	if (s->gone)
		return -1;
	return send_line(s, "{\"op\":\"interrupt\"}") < 0 ? -1 : 0;
}

char *ps_session_query(struct ps_session *s, const char *kind, const char *code, size_t len,
		       size_t cursor, char *err, size_t errlen)
{
	cJSON *req = cJSON_CreateObject(), *m;
	char *out = NULL, *c = malloc(len + 1);

	if (!c) {
		cJSON_Delete(req);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(c, code, len);
	c[len] = '\0';
	cJSON_AddStringToObject(req, "op", "query");
	cJSON_AddStringToObject(req, "kind", kind);
	cJSON_AddStringToObject(req, "code", c);
	cJSON_AddNumberToObject(req, "cursor", (double)cursor);
	free(c);
	pthread_mutex_lock(&s->mu);
	if (send_json(s, req) < 0) {
		set_gone(s, err, errlen);
	} else if ((m = await_event(s, "query", NULL, err, errlen))) {
		cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "result");

		if (cJSON_IsObject(r))
			out = cJSON_PrintUnformatted(r);
		else
			snprintf(err, errlen, "%s", str_of(m, "error") ?: "query failed");
		cJSON_Delete(m);
	}
	pthread_mutex_unlock(&s->mu);
	return out;
}

int ps_session_configure(struct ps_session *s, const struct ps_limits *cell,
			 const struct ps_session_limits *sl, char *err, size_t errlen)
{
	cJSON *req = cJSON_CreateObject(), *l;
	int ret = 0;

	cJSON_AddStringToObject(req, "op", "configure");
	l = cJSON_AddObjectToObject(req, "limits");
	cJSON_AddNumberToObject(l, "wall_ms", (double)cell->wall_ms);
	cJSON_AddNumberToObject(l, "cpu_ms", (double)cell->cpu_ms);
	cJSON_AddNumberToObject(l, "output_bytes", (double)cell->output_bytes);
	l = cJSON_AddObjectToObject(req, "session");
	cJSON_AddNumberToObject(l, "idle_ms", (double)sl->idle_ms);
	cJSON_AddNumberToObject(l, "lifetime_ms", (double)sl->lifetime_ms);
	cJSON_AddNumberToObject(l, "cpu_ms", (double)sl->cpu_ms);
	cJSON_AddNumberToObject(l, "cells", (double)sl->cells);
	pthread_mutex_lock(&s->mu);
	/* not waited for: a round trip less for a new session; the next call reads its answer */
	if (send_json(s, req) < 0) {
		set_gone(s, err, errlen);
		ret = -1;
	} else {
		s->configuring = true;
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}

int ps_session_restart(struct ps_session *s, char *err, size_t errlen)
{
	cJSON *m;
	int ret = -1;

	pthread_mutex_lock(&s->mu);
	if (send_line(s, "{\"op\":\"restart\"}") < 0) {
		set_gone(s, err, errlen);
	} else if ((m = await_event(s, "restarted", NULL, err, errlen))) {
		cJSON_Delete(m);
		ret = 0;
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}

char *ps_session_info(struct ps_session *s)
{
	char err[300];
	char *out = NULL;
	cJSON *m;

	pthread_mutex_lock(&s->mu);
	if (send_line(s, "{\"op\":\"info\"}") == 0 && (m = await_event(s, "info", NULL, err,
								       sizeof(err)))) {
		cJSON_DeleteItemFromObject(m, "event");
		if (s->ended[0])
			cJSON_AddStringToObject(m, "ended_reason", s->ended);
		out = cJSON_PrintUnformatted(m);
		cJSON_Delete(m);
	}
	pthread_mutex_unlock(&s->mu);
	return out;
}

const char *ps_session_wait_ended(struct ps_session *s, int timeout_ms)
{
	char err[300];

	if (pthread_mutex_trylock(&s->mu) != 0)
		return NULL;
	while (!s->ended[0] && !s->gone) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		char *line;
		cJSON *m;

		if (!s->len && poll(&p, 1, timeout_ms) <= 0)
			break;
		line = read_line(s, 0);
		if (!line)
			break;
		m = parse_line(line);
		free(line);
		note_ended(s, m, err, sizeof(err));
		/* the answer to a configure sent ahead: a refusal ends the session (its limits
		 * would not be the request's) */
		const char *ev = m ? str_of(m, "event") : NULL;

		if (s->configuring && ev && (!strcmp(ev, "configured") || !strcmp(ev, "error"))) {
			s->configuring = false;
			if (!strcmp(ev, "error") && !s->ended[0])
				snprintf(s->ended, sizeof(s->ended), "session configure: %s",
					 str_of(m, "message") ?: "refused");
		}
		cJSON_Delete(m);
	}
	pthread_mutex_unlock(&s->mu);
	return ps_session_ended(s);
}

const char *ps_session_ended(struct ps_session *s)
{
	return s->ended[0] ? s->ended : s->gone ? "the session host exited" : NULL;
}

void ps_session_close(struct ps_session *s)
{
	struct pollfd p;

	if (!s)
		return;
	/* EOF ends the session; its host kills and reaps everything, then exits */
	shutdown(s->fd, SHUT_RDWR);
	close(s->fd);
	p = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
	if (s->pidfd >= 0 && poll(&p, 1, 5000) <= 0)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	/* ours to reap when we started it; a zygote reaps the ones it forked */
	while (s->pid > 0 && waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (s->pidfd >= 0)
		close(s->pidfd);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->wmu);
	free(s->buf);
	free(s->verdict_text);
	free(s);
}
