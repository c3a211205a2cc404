/* The HTTP front of `pysnip serve`: routes, auth, admission, runs, metrics (request bodies are
 * parsed in server_request.c).
 * libmicrohttpd runs a thread per connection; a request's thread blocks while its zygote runs
 * the snippet, so admission (workers + bounded queue, else 429) is what bounds the load. */
#include "server.h"
#include "sessions.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/result.h"
#include "util/util.h"

enum { CONNECTION_TIMEOUT_S = 60 };

static const double latency_buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					  0.1,	  0.25,	 0.5,	 1,	2.5,   5,     10 };
#define N_BUCKETS PS_ARRAY_LEN(latency_buckets)

struct metrics {
	uint64_t by_code[600];
	uint64_t by_status[PS_STATUS_COUNT];
	uint64_t latency[N_BUCKETS + 1];
	double latency_sum;
	uint64_t latency_count;
};

struct ps_server {
	struct ps_server_config cfg;
	struct MHD_Daemon *d;
	pthread_mutex_t mu;	/* guards everything below */
	pthread_cond_t cv;
	unsigned busy, waiting, active;
	bool *slot_used;
	bool draining;
	struct metrics m;
	struct ps_sessions *sessions;	/* /v1/sessions (sessions.c) */
};

/* Per-request state across libmicrohttpd's calls. */
struct req {
	char *body;
	size_t len, cap;
	bool too_big;
	uint64_t start_us;
	const char *allow;	/* the method a 405 names */
	bool tracked;		/* counted in active until its answer is sent */
};

/* ---------------------------------------------------------------- admission */

enum admit { ADMIT_OK, ADMIT_FULL, ADMIT_DRAINING };

static enum admit admit(struct ps_server *s, unsigned *slot)
{
	enum admit ret = ADMIT_OK;

	pthread_mutex_lock(&s->mu);
	if (s->draining) {
		ret = ADMIT_DRAINING;
	} else if (s->busy + s->waiting >= s->cfg.workers + s->cfg.queue) {
		ret = ADMIT_FULL;
	} else {
		s->waiting++;
		while (s->busy >= s->cfg.workers)
			pthread_cond_wait(&s->cv, &s->mu);
		s->waiting--;
		s->busy++;
		for (unsigned i = 0; i < s->cfg.workers; i++) {
			if (!s->slot_used[i]) {
				s->slot_used[i] = true;
				*slot = i;
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}

static void release(struct ps_server *s, unsigned slot)
{
	pthread_mutex_lock(&s->mu);
	s->slot_used[slot] = false;
	s->busy--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- responses */

static void record(struct ps_server *s, unsigned code, uint64_t start_us)
{
	double secs = (double)(ps_now_us() - start_us) / 1e6;
	size_t b = 0;

	while (b < N_BUCKETS && secs > latency_buckets[b])
		b++;
	pthread_mutex_lock(&s->mu);
	if (code < PS_ARRAY_LEN(s->m.by_code))
		s->m.by_code[code]++;
	s->m.latency[b]++;
	s->m.latency_sum += secs;
	s->m.latency_count++;
	pthread_mutex_unlock(&s->mu);
}

/* Queue body (malloc'd, taken over) as the answer. */
static enum MHD_Result respond(struct ps_server *s, struct MHD_Connection *c, struct req *rq,
			       unsigned code, char *body, const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!body) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		body = strdup("{\"error\":\"out of memory\",\"field\":null}\n");
		if (!body)
			return MHD_NO;
	}
	r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_TOO_MANY_REQUESTS || code == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rq->allow);
	if (code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	record(s, code, rq->start_us);
	return ret;
}

/* {"error": reason, "field": field-or-null} */
static enum MHD_Result respond_error(struct ps_server *s, struct MHD_Connection *c,
				     struct req *rq, unsigned code, const char *field,
				     const char *reason)
{
	char *r = ps_json_quote_bytes(reason, strlen(reason));
	char *f = field ? ps_json_quote_bytes(field, strlen(field)) : NULL;
	char *body = NULL;

	if (r && (f || !field) &&
	    asprintf(&body, "{\"error\":%s,\"field\":%s}\n", r, f ? f : "null") < 0)
		body = NULL;
	free(r);
	free(f);
	return respond(s, c, rq, code, body, "application/json");
}

/* ---------------------------------------------------------------- runs */

/* One run on the job's zygote: the verdict JSON (malloc'd); *status its enum ps_status. */
static char *run_one(struct ps_server *s, const struct ps_job *j, size_t i, unsigned slot,
		     int *status)
{
	struct ps_policy *p = &s->cfg.policies[j->policy];
	struct ps_zygote *z = &s->cfg.zygotes[j->policy];
	struct ps_run r = { .code = j->code, .code_len = j->code_len, .stdin_data = j->stdins[i],
			    .limits = j->limits, .slot = slot };
	struct ps_zanswer a;

	r.stdin_len = j->stdins[i] ? strlen(j->stdins[i]) : 0;
	if (ps_zygote_call(z, p, &r, &a) == 0) {
		*status = a.status;
		return a.json;
	}
	*status = PS_STATUS_INTERNAL_ERROR;
	return ps_verdict_internal_error(p, a.error, false);
}

static void count_status(struct ps_server *s, int status)
{
	pthread_mutex_lock(&s->mu);
	if (status >= 0 && status < PS_STATUS_COUNT)
		s->m.by_status[status]++;
	pthread_mutex_unlock(&s->mu);
}

/* Run every input; a batch's verdicts go in a JSON list. 500 when the host failed a run. */
static char *run_job(struct ps_server *s, const struct ps_job *j, unsigned slot, unsigned *code)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	*code = MHD_HTTP_OK;
	if (j->batch)
		fputc('[', f);
	for (size_t i = 0; i < j->n; i++) {
		int status;
		char *v = run_one(s, j, i, slot, &status);

		count_status(s, status);
		if (status == PS_STATUS_INTERNAL_ERROR)
			*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		fprintf(f, "%s%s", i ? "," : "", v ? v : "null");
		free(v);
	}
	fputs(j->batch ? "]\n" : "\n", f);
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

static enum MHD_Result handle_run(struct ps_server *s, struct MHD_Connection *c, struct req *rq,
				  bool batch)
{
	struct ps_job j;
	struct ps_bad b = { "", "" };
	enum MHD_Result ret;
	unsigned slot = 0, code = MHD_HTTP_INTERNAL_SERVER_ERROR;
	char *body;

	/* Drain waits for this run's answer to be sent, not only for the run. */
	pthread_mutex_lock(&s->mu);
	s->active++;
	rq->tracked = true;
	pthread_mutex_unlock(&s->mu);
	if (ps_job_parse(rq->body, rq->len, batch, s->cfg.policies, s->cfg.n, &j, &b) < 0) {
		ret = respond_error(s, c, rq, MHD_HTTP_BAD_REQUEST, b.field, b.reason);
		goto out;
	}
	switch (admit(s, &slot)) {
	case ADMIT_FULL:
		ret = respond_error(s, c, rq, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
				    "every worker is busy and the queue is full; retry later");
		goto out;
	case ADMIT_DRAINING:
		ret = respond_error(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
				    "the server is shutting down");
		goto out;
	case ADMIT_OK:
		break;
	}
	body = run_job(s, &j, slot, &code);
	release(s, slot);
	ret = respond(s, c, rq, code, body, "application/json");
out:
	ps_job_free(&j);
	return ret;
}

/* ---------------------------------------------------------------- GET endpoints */

static enum MHD_Result handle_health(struct ps_server *s, struct MHD_Connection *c,
				     struct req *rq)
{
	return respond(s, c, rq, MHD_HTTP_OK, strdup("{\"status\":\"ok\"}\n"), "application/json");
}

static void metrics_text(struct ps_server *s, FILE *f)
{
	uint64_t cum = 0;

	fprintf(f, "# HELP pysnip_requests_total HTTP requests answered, by status code.\n"
		   "# TYPE pysnip_requests_total counter\n");
	for (size_t i = 0; i < PS_ARRAY_LEN(s->m.by_code); i++)
		if (s->m.by_code[i])
			fprintf(f, "pysnip_requests_total{code=\"%zu\"} %llu\n", i,
				(unsigned long long)s->m.by_code[i]);
	fprintf(f, "# HELP pysnip_verdicts_total Runs, by verdict status.\n"
		   "# TYPE pysnip_verdicts_total counter\n");
	for (int i = 0; i < PS_STATUS_COUNT; i++)
		fprintf(f, "pysnip_verdicts_total{status=\"%s\"} %llu\n",
			ps_status_name((enum ps_status)i), (unsigned long long)s->m.by_status[i]);
	fprintf(f, "# HELP pysnip_request_duration_seconds Time from request to answer.\n"
		   "# TYPE pysnip_request_duration_seconds histogram\n");
	for (size_t b = 0; b <= N_BUCKETS; b++) {
		cum += s->m.latency[b];
		if (b < N_BUCKETS)
			fprintf(f, "pysnip_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
				latency_buckets[b], (unsigned long long)cum);
		else
			fprintf(f, "pysnip_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cum);
	}
	fprintf(f, "pysnip_request_duration_seconds_sum %.6f\n"
		   "pysnip_request_duration_seconds_count %llu\n",
		s->m.latency_sum, (unsigned long long)s->m.latency_count);
	fprintf(f, "# HELP pysnip_queue_depth Requests waiting for a worker.\n"
		   "# TYPE pysnip_queue_depth gauge\npysnip_queue_depth %u\n"
		   "# HELP pysnip_workers_busy Runs in progress.\n"
		   "# TYPE pysnip_workers_busy gauge\npysnip_workers_busy %u\n"
		   "# HELP pysnip_workers Concurrent runs allowed.\n"
		   "# TYPE pysnip_workers gauge\npysnip_workers %u\n",
		s->waiting, s->busy, s->cfg.workers);
	fprintf(f, "# HELP pysnip_zygote_restarts_total Zygotes restarted after dying.\n"
		   "# TYPE pysnip_zygote_restarts_total counter\n");
	for (size_t i = 0; i < s->cfg.n; i++)
		fprintf(f, "pysnip_zygote_restarts_total{policy=\"%s\"} %u\n",
			s->cfg.zygotes[i].name,
			__atomic_load_n(&s->cfg.zygotes[i].restarts, __ATOMIC_RELAXED));
}

static enum MHD_Result handle_metrics(struct ps_server *s, struct MHD_Connection *c,
				      struct req *rq)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (f) {
		pthread_mutex_lock(&s->mu);
		metrics_text(s, f);
		pthread_mutex_unlock(&s->mu);
		ps_sessions_metrics(s->sessions, f);
		if (fclose(f)) {
			free(out);
			out = NULL;
		}
	}
	return respond(s, c, rq, MHD_HTTP_OK, out, "text/plain; version=0.0.4");
}

/* ---------------------------------------------------------------- routing */

enum route_kind { R_EXEC, R_BATCH, R_HEALTH, R_METRICS };

static const struct route {
	const char *path, *method;
	enum route_kind kind;
	bool open;		/* no token needed */
} routes[] = {
	{ "/v1/exec", "POST", R_EXEC, false },
	{ "/v1/batch", "POST", R_BATCH, false },
	{ "/healthz", "GET", R_HEALTH, true },
	{ "/metrics", "GET", R_METRICS, false },
};

/* The token check reads every byte of the expected token whatever the input, so its time
 * does not depend on where the first difference is. */
static bool token_ok(const struct ps_server *s, const char *auth)
{
	const char *want = s->cfg.token;
	size_t wl = strlen(want), gl;
	volatile unsigned char diff = 0;

	if (!auth || strncmp(auth, "Bearer ", 7))
		return false;
	auth += 7;
	gl = strlen(auth);
	diff |= (unsigned char)(gl != wl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < gl ? auth[i] : 0));
	return diff == 0;
}

/* /v1/sessions...: sessions.c answers, behind the same token and body checks. */
static enum MHD_Result dispatch_sessions(struct ps_server *s, struct MHD_Connection *c,
					 struct req *rq, const char *url, const char *method)
{
	char *body = NULL;
	unsigned code;

	if (s->cfg.token && !token_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								     MHD_HTTP_HEADER_AUTHORIZATION)))
		return respond_error(s, c, rq, MHD_HTTP_UNAUTHORIZED, NULL,
				     "missing or wrong 'Authorization: Bearer' token");
	if (rq->too_big)
		return respond_error(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "body: too large");
	code = ps_sessions_route(s->sessions, method, url, rq->body, rq->len, &body);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		rq->allow = "POST";
	return respond(s, c, rq, code, body, "application/json");
}

static enum MHD_Result dispatch(struct ps_server *s, struct MHD_Connection *c, struct req *rq,
				const char *url, const char *method)
{
	const struct route *rt = NULL;
	char reason[128];

	for (size_t i = 0; i < PS_ARRAY_LEN(routes); i++)
		if (!strcmp(url, routes[i].path))
			rt = &routes[i];
	if (!rt && !strncmp(url, "/v1/sessions", 12) && (!url[12] || url[12] == '/'))
		return dispatch_sessions(s, c, rq, url, method);
	if (!rt)
		return respond_error(s, c, rq, MHD_HTTP_NOT_FOUND, NULL,
				     "no such endpoint (POST /v1/exec, POST /v1/batch, "
				     "GET /healthz, GET /metrics)");
	if (!rt->open && s->cfg.token &&
	    !token_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_AUTHORIZATION)))
		return respond_error(s, c, rq, MHD_HTTP_UNAUTHORIZED, NULL,
				     "missing or wrong 'Authorization: Bearer' token");
	if (strcmp(method, rt->method)) {
		snprintf(reason, sizeof(reason), "%s %s: method not allowed (use %s)", method, url,
			 rt->method);
		rq->allow = rt->method;
		return respond_error(s, c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, reason);
	}
	if (rq->too_big) {
		snprintf(reason, sizeof(reason), "body: larger than %zu bytes", s->cfg.body_max);
		return respond_error(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, reason);
	}
	switch (rt->kind) {
	case R_EXEC:
		return handle_run(s, c, rq, false);
	case R_BATCH:
		return handle_run(s, c, rq, true);
	case R_HEALTH:
		return handle_health(s, c, rq);
	case R_METRICS:
		return handle_metrics(s, c, rq);
	}
	return MHD_NO;
}

static void take_upload(struct ps_server *s, struct req *rq, const char *data, size_t n)
{
	if (rq->too_big || rq->len + n > s->cfg.body_max) {
		rq->too_big = true;	/* keep reading and dropping: answer 413 at the end */
		return;
	}
	if (rq->len + n > rq->cap) {
		size_t cap = rq->cap ? rq->cap : 4096;
		char *nb;

		while (cap < rq->len + n)
			cap *= 2;
		nb = realloc(rq->body, cap);
		if (!nb) {
			rq->too_big = true;
			return;
		}
		rq->body = nb;
		rq->cap = cap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ps_server *s = cls;
	struct req *rq = *con_cls;

	if (!rq) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->start_us = ps_now_us();
		*con_cls = rq;
		/* A declared oversize body is refused before it is read. */
		if (cl && strtoull(cl, NULL, 10) > s->cfg.body_max) {
			rq->too_big = true;
			return dispatch(s, c, rq, url, method);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		take_upload(s, rq, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(s, c, rq, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct ps_server *s = cls;
	struct req *rq = *con_cls;

	if (rq) {
		if (rq->tracked) {
			pthread_mutex_lock(&s->mu);
			s->active--;
			pthread_cond_broadcast(&s->cv);
			pthread_mutex_unlock(&s->mu);
		}
		free(rq->body);
		free(rq);
	}
	*con_cls = NULL;
}

int ps_server_start(const struct ps_server_config *cfg, struct ps_server **out, char *err,
		    size_t errlen)
{
	struct ps_server *s = calloc(1, sizeof(*s));

	if (!s || !(s->slot_used = calloc(cfg->workers, sizeof(bool)))) {
		free(s);
		snprintf(err, errlen, "serve: out of memory");
		return -1;
	}
	s->cfg = *cfg;
	s->sessions = ps_sessions_new(&s->cfg);
	if (!s->sessions) {
		free(s->slot_used);
		free(s);
		snprintf(err, errlen, "serve: out of memory");
		return -1;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
					MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
				0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET,
				cfg->listen_fd, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
				on_completed, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
				MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
				/* a thread per connection: small stacks, the handlers are shallow */
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 << 10), MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "MHD_start_daemon: failed (see messages above)");
		ps_sessions_free(s->sessions);
		free(s->slot_used);
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

void ps_server_drain(struct ps_server *s)
{
	MHD_socket fd;

	pthread_mutex_lock(&s->mu);
	s->draining = true;
	pthread_mutex_unlock(&s->mu);
	fd = MHD_quiesce_daemon(s->d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	pthread_mutex_lock(&s->mu);
	while (s->busy || s->waiting || s->active)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	MHD_stop_daemon(s->d);
	s->d = NULL;
}

void ps_server_free(struct ps_server *s)
{
	if (!s)
		return;
	if (s->d)
		MHD_stop_daemon(s->d);
	ps_sessions_free(s->sessions);
	free(s->slot_used);
	free(s);
}
