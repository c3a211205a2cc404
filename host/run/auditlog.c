/* The audit log writer (auditlog.h): a line is built whole, then written with one write(2)
 * on an O_APPEND descriptor. In serve a thread of its own writes, from a bounded queue, so
 * that a slow or hung disk never holds an answer up (a line that finds the queue full is
 * lost, counted and reported); elsewhere the caller writes, after its run. */
#include "auditlog.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

enum {
	QUEUE_MAX = 4096,	/* lines waiting for the writer thread */
	CLOSE_WAIT_S = 5,	/* how long the close waits for them */
};

struct ps_auditlog {
	int fd;
	bool own_fd;
	char *path;
	pthread_mutex_t mu;	/* guards everything below */
	unsigned long lost;	/* lines not written */
	int last_errno;		/* the error already reported (reported again when it changes) */
	bool writer, stop, full_reported;
	pthread_t th;
	pthread_cond_t cv;
	struct line { char *s; size_t n; } queue[QUEUE_MAX];
	size_t head, count;
};

int ps_auditlog_open(const char *path, struct ps_auditlog **out, char *err, size_t errlen)
{
	struct ps_auditlog *l = calloc(1, sizeof(*l));
	struct stat st;

	*out = NULL;
	if (!l || !(l->path = strdup(path))) {
		free(l);
		snprintf(err, errlen, "audit log %s: out of memory", path);
		return -1;
	}
	if (!strcmp(path, "-")) {
		/* stdout may be a pipe to a slow reader: never let it hold a run up. */
		l->fd = 1;
		if (fstat(1, &st) == 0 && !S_ISREG(st.st_mode))
			fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	} else {
		l->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
		l->own_fd = true;
		if (l->fd < 0) {
			snprintf(err, errlen, "audit log %s: %s", path, strerror(errno));
			free(l->path);
			free(l);
			return -1;
		}
	}
	pthread_mutex_init(&l->mu, NULL);
	*out = l;
	return 0;
}

void ps_auditlog_close(struct ps_auditlog *l)
{
	if (!l)
		return;
	if (l->writer) {	/* the writer drains the queue, then ends; a hung log can't hold us */
		struct timespec until;

		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += CLOSE_WAIT_S;
		if (pthread_timedjoin_np(l->th, NULL, &until)) {
			pthread_mutex_lock(&l->mu);
			ps_err("audit log %s: %zu line(s) still waiting after %d s: not written",
			       l->path, l->count + 1, CLOSE_WAIT_S);
			pthread_mutex_unlock(&l->mu);
			return;	/* the writer still uses l: the process is about to end anyway */
		}
		pthread_cond_destroy(&l->cv);
	}
	if (l->lost)
		ps_err("audit log %s: %lu line(s) could not be written", l->path, l->lost);
	if (l->own_fd)
		close(l->fd);
	pthread_mutex_destroy(&l->mu);
	free(l->path);
	free(l);
}

/* One line, one write: a short write (a disk filling up mid-line) counts as lost. */
static void write_line(struct ps_auditlog *l, char *s, size_t n)
{
	ssize_t w;
	int e;

	do
		w = write(l->fd, s, n);
	while (w < 0 && errno == EINTR);
	e = w < 0 ? errno : EIO;
	pthread_mutex_lock(&l->mu);
	if (w != (ssize_t)n) {
		l->lost++;
		if (e != l->last_errno)
			ps_err("audit log %s: write: %s (the run goes on; lines are lost until this "
			       "is fixed)", l->path, w >= 0 ? "short write" : strerror(e));
		l->last_errno = e;
	} else {
		l->last_errno = 0;
	}
	pthread_mutex_unlock(&l->mu);
	free(s);
}

static void *writer(void *arg)
{
	struct ps_auditlog *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct line ln;

		while (!l->count && !l->stop)
			pthread_cond_wait(&l->cv, &l->mu);
		if (!l->count)
			break;
		ln = l->queue[l->head];
		l->head = (l->head + 1) % QUEUE_MAX;
		l->count--;
		pthread_mutex_unlock(&l->mu);
		write_line(l, ln.s, ln.n);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int ps_auditlog_start_writer(struct ps_auditlog *l)
{
	int rc;

	pthread_cond_init(&l->cv, NULL);
	rc = pthread_create(&l->th, NULL, writer, l);
	if (rc) {
		pthread_cond_destroy(&l->cv);
		return -rc;
	}
	l->writer = true;
	return 0;
}

static void enqueue(struct ps_auditlog *l, char *s, size_t n)
{
	pthread_mutex_lock(&l->mu);
	if (l->count == QUEUE_MAX) {
		l->lost++;
		if (!l->full_reported)
			ps_err("audit log %s: %d lines wait for the disk; lines are lost until it "
			       "catches up", l->path, QUEUE_MAX);
		l->full_reported = true;
		free(s);
	} else {
		l->queue[(l->head + l->count) % QUEUE_MAX] = (struct line){ s, n };
		l->count++;
		l->full_reported = false;
		pthread_cond_signal(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
}

static void emit(struct ps_auditlog *l, cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	size_t n = s ? strlen(s) : 0;

	cJSON_Delete(o);
	if (!s) {
		pthread_mutex_lock(&l->mu);
		l->lost++;
		pthread_mutex_unlock(&l->mu);
		return;
	}
	s[n] = '\n';	/* over the NUL: the line goes out in one write */
	if (l->writer)
		enqueue(l, s, n + 1);
	else
		write_line(l, s, n + 1);
}

static void add_str(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* "2026-12-01T19:42:07.123Z" */
static cJSON *line_start(const char *kind, const struct ps_audit_who *who)
{
	cJSON *o = cJSON_CreateObject();
	struct timespec ts;
	struct tm tm;
	char t[40];

	if (!o)
		return NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + strlen(t), sizeof(t) - strlen(t), ".%03ldZ", ts.tv_nsec / 1000000);
	cJSON_AddStringToObject(o, "time", t);
	cJSON_AddStringToObject(o, "kind", kind);
	add_str(o, "request_id", who ? who->request_id : NULL);
	add_str(o, "client", who ? who->client : NULL);
	add_str(o, "token_id", who ? who->token_id : NULL);
	return o;
}

/* The verdict's own values, moved over (never re-typed, so they match it exactly). */
static void take(cJSON *o, cJSON *verdict, const char *key)
{
	cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(verdict, key);

	if (v)
		cJSON_AddItemToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void ps_auditlog_run(struct ps_auditlog *l, const struct ps_audit_who *who, long index,
		     const char *verdict_json)
{
	static const char *const keys[] = { "policy", "status", "exit_code", "signal_name",
					    "usage", "denials", "error" };
	cJSON *v, *o;

	if (!l)
		return;
	o = line_start("run", who);
	v = verdict_json ? cJSON_Parse(verdict_json) : NULL;
	if (o && index >= 0)
		cJSON_AddNumberToObject(o, "index", (double)index);
	for (size_t i = 0; o && i < PS_ARRAY_LEN(keys); i++)
		take(o, v, keys[i]);
	if (o && !v)	/* never silently: a verdict that did not parse is still a run */
		cJSON_ReplaceItemInObject(o, "status", cJSON_CreateString("unknown"));
	cJSON_Delete(v);
	emit(l, o);
}

void ps_auditlog_refused(struct ps_auditlog *l, const struct ps_audit_who *who, unsigned code,
			 const char *method, const char *path, const char *reason)
{
	cJSON *o;

	if (!l)
		return;
	o = line_start("refused", who);
	if (o) {
		cJSON_AddNumberToObject(o, "http_status", code);
		add_str(o, "method", method);
		add_str(o, "path", path);
		add_str(o, "reason", reason);
	}
	emit(l, o);
}

void ps_auditlog_new_id(char *buf, size_t len)
{
	uint64_t x = 0;

	/* Early boot, no entropy yet: time and pid are unique enough for an id. */
	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
		x = ps_now_us() ^ ((uint64_t)getpid() << 40);
	snprintf(buf, len, "r-%016llx", (unsigned long long)x);
}
