/* The HTTP front of `pysnip serve`: routes, auth, admission, runs, metrics (request bodies are
 * parsed in server_request.c).
 * libmicrohttpd runs a thread per connection; a request's thread blocks while its zygote runs
 * the snippet, so admission (workers + bounded queue, else 429) is what bounds the load. */
#include "server.h"
#include "sessions.h"

#include <errno.h>
#include <microhttpd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accept.h"
#include "run/result.h"
#include "util/util.h"

enum {
	CONNECTION_TIMEOUT_S = 60,
	HEADER_BYTES_MAX = 32 << 10,	/* MHD's buffer for a request's headers */
	DROP_BODY_MAX = 64 << 10,	/* a refused request's body read and dropped, up to */
};

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
	struct ps_acceptor *acceptor;
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
	const struct route *route;	/* what the headers asked for, checked */
	unsigned reject;		/* else the answer the headers got, and why */
	char reason[160];
	const char *url, *method;	/* for the audit log */
	struct ps_audit_who who;	/* the audit log's request id, client, token id */
	char id[72], client[64];
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
	if (code == MHD_HTTP_UNAUTHORIZED || code == MHD_HTTP_CONTENT_TOO_LARGE ||
	    code == MHD_HTTP_TOO_MANY_REQUESTS)
		ps_auditlog_refused(s->cfg.audit, &rq->who, code, rq->method, rq->url, reason);
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
			    .limits = j->limits, .slot = slot, .inputs = j->files,
			    .n_inputs = j->n_files, .want_output = true, .files_content = true };
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

static char *answer_cap_error(size_t ran, size_t n)
{
	char *body = NULL;

	if (asprintf(&body, "{\"error\":\"the batch's answer passed %d MiB after %zu of its %zu "
		     "inputs (their reports); the rest were not run\",\"field\":\"stdin\"}\n",
		     PS_SERVE_BATCH_ANSWER_MAX >> 20, ran, n) < 0)
		return NULL;
	return body;
}

/* Run every input; a batch's verdicts go in a JSON list. 500 when the host failed a run. */
static char *run_job(struct ps_server *s, const struct ps_job *j, unsigned slot, unsigned *code,
		     const struct ps_audit_who *who)
{
	char *out = NULL;
	size_t len = 0, answer = 0;
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
		ps_auditlog_run(s->cfg.audit, who, j->batch ? (long)i : -1, v);
		if (status == PS_STATUS_INTERNAL_ERROR)
			*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		answer += v ? strlen(v) : 4;
		fprintf(f, "%s%s", i ? "," : "", v ? v : "null");
		free(v);
		/* The output was bounded before the start; what else a verdict holds (an
		 * exception's report, up to megabytes) is counted here. */
		if (j->batch && answer > PS_SERVE_BATCH_ANSWER_MAX && i + 1 < j->n) {
			fclose(f);
			free(out);
			*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
			return answer_cap_error(i + 1, j->n);
		}
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
	body = run_job(s, &j, slot, &code, &rq->who);
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

static void connection_metrics(struct ps_server *s, FILE *f)
{
	struct ps_accept_stats st;

	ps_accept_stats(s->acceptor, &st);
	fprintf(f, "# HELP pysnip_connections Open connections; of them, not yet past the token "
		   "check.\n# TYPE pysnip_connections gauge\n"
		   "pysnip_connections{state=\"open\"} %u\n"
		   "pysnip_connections{state=\"untrusted\"} %u\n"
		   "# HELP pysnip_connections_refused_total Connections answered 503 and closed.\n"
		   "# TYPE pysnip_connections_refused_total counter\n"
		   "pysnip_connections_refused_total{reason=\"budget\"} %lu\n"
		   "pysnip_connections_refused_total{reason=\"untrusted\"} %lu\n"
		   "# HELP pysnip_connections_cut_total Untrusted connections cut at --header-timeout.\n"
		   "# TYPE pysnip_connections_cut_total counter\npysnip_connections_cut_total %lu\n"
		   "# HELP pysnip_accept_paused_total Times accepting paused (out of descriptors).\n"
		   "# TYPE pysnip_accept_paused_total counter\npysnip_accept_paused_total %lu\n",
		st.conns, st.untrusted, st.refused_budget, st.refused_untrusted, st.cut, st.paused);
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
	fprintf(f, "# HELP pysnip_workers_lost_total Workers the front could not receive "
		   "(out of descriptors); each is replaced.\n"
		   "# TYPE pysnip_workers_lost_total counter\n");
	for (size_t i = 0; i < s->cfg.n; i++) {
		struct ps_zygote *z = &s->cfg.zygotes[i];
		unsigned lost;

		pthread_mutex_lock(&z->mu);
		lost = z->lost;
		pthread_mutex_unlock(&z->mu);
		fprintf(f, "pysnip_workers_lost_total{policy=\"%s\"} %u\n", z->name, lost);
	}
	connection_metrics(s, f);
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

enum route_kind { R_EXEC, R_BATCH, R_HEALTH, R_METRICS, R_SESSIONS };

static const struct route {
	const char *path, *method;
	enum route_kind kind;
	bool open;		/* no token needed */
} routes[] = {
	{ "/v1/exec", "POST", R_EXEC, false },
	{ "/v1/batch", "POST", R_BATCH, false },
	{ "/healthz", "GET", R_HEALTH, true },
	{ "/metrics", "GET", R_METRICS, false },
	/* and everything under it: /v1/sessions/ID/exec... (sessions.c checks the method) */
	{ "/v1/sessions", NULL, R_SESSIONS, false },
};

/* The route for a path as sent (no %HH decoding: keep_escapes). A route with parameters in
 * its path matches here too, and leaves them for its handler. */
static const struct route *find_route(const char *url)
{
	for (size_t i = 0; i < PS_ARRAY_LEN(routes); i++) {
		size_t n = strlen(routes[i].path);

		if (!strcmp(url, routes[i].path) ||
		    (routes[i].kind == R_SESSIONS && !strncmp(url, routes[i].path, n) &&
		     url[n] == '/'))
			return &routes[i];
	}
	return NULL;
}

/* The token check reads every byte of the expected token whatever the input, so its time
 * does not depend on where the first difference is. The header is taken with its length: a
 * NUL in it must not end the comparison early ("Bearer tok\0junk" is not "Bearer tok"). */
static bool token_ok(const struct ps_server *s, const char *auth, size_t len)
{
	const char *want = s->cfg.token;
	size_t wl = strlen(want), gl;
	volatile unsigned char diff = 0;

	if (!auth || len < 7 || memcmp(auth, "Bearer ", 7))
		return false;
	auth += 7;
	gl = len - 7;
	diff |= (unsigned char)(gl != wl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < gl ? auth[i] : 0));
	return diff == 0;
}

static bool authorization_ok(const struct ps_server *s, struct MHD_Connection *c)
{
	static const char key[] = MHD_HTTP_HEADER_AUTHORIZATION;
	const char *v = NULL;
	size_t vl = 0;

	if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, key, sizeof(key) - 1, &v, &vl) !=
	    MHD_YES)
		return false;
	return token_ok(s, v, vl);
}

/* Everything that can be decided on the headers is, before a byte of the body is kept (an
 * unauthenticated client must not make us hold its upload): the path, the token, the method
 * and a declared length. true when the request may go on (rq->route set), else false with
 * rq->reject and rq->reason. */
static bool precheck(struct ps_server *s, struct MHD_Connection *c, struct req *rq,
		     const char *url, const char *method)
{
	const struct route *rt = find_route(url);
	const char *cl;
	bool authed;

	if (!rt) {
		rq->reject = MHD_HTTP_NOT_FOUND;
		snprintf(rq->reason, sizeof(rq->reason), "no such endpoint (POST /v1/exec, POST "
			 "/v1/batch, /v1/sessions, GET /healthz, GET /metrics)");
		return false;
	}
	authed = !s->cfg.token || authorization_ok(s, c);
	if (authed)
		ps_accept_trust(c);
	if (authed && !rt->open && s->cfg.token)
		rq->who.token_id = s->cfg.token_id;
	if (!rt->open && !authed) {
		rq->reject = MHD_HTTP_UNAUTHORIZED;
		snprintf(rq->reason, sizeof(rq->reason),
			 "missing or wrong 'Authorization: Bearer' token");
		return false;
	}
	if (rt->method && strcmp(method, rt->method)) {
		rq->reject = MHD_HTTP_METHOD_NOT_ALLOWED;
		snprintf(rq->reason, sizeof(rq->reason), "%.16s %s: method not allowed (use %s)",
			 method, rt->path, rt->method);
		rq->allow = rt->method;
		return false;
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > s->cfg.body_max) {
		rq->reject = MHD_HTTP_CONTENT_TOO_LARGE;
		snprintf(rq->reason, sizeof(rq->reason), "body: larger than %zu bytes",
			 s->cfg.body_max);
		return false;
	}
	rq->route = rt;
	rq->url = url;		/* MHD keeps both until the request completes */
	rq->method = method;
	return true;
}

/* A refused request with a small declared body is answered once that body has been read and
 * dropped: answering first and closing with unread input makes the kernel reset the
 * connection, which can destroy the answer before the client reads it. A large or chunked
 * one is answered at once, and the connection closed unread. */
static bool answer_now(struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te || (cl && strtoull(cl, NULL, 10) > DROP_BODY_MAX);
}

/* /v1/sessions...: sessions.c answers (its paths carry the session id, its methods vary),
 * behind the same header checks as every route (precheck). */
static enum MHD_Result dispatch_sessions(struct ps_server *s, struct MHD_Connection *c,
					 struct req *rq)
{
	char *body = NULL;
	unsigned code;

	code = ps_sessions_route(s->sessions, rq->method, rq->url, rq->body, rq->len, &body);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		rq->allow = "POST";
	return respond(s, c, rq, code, body, "application/json");
}

/* The body is in: run what precheck let through. */
static enum MHD_Result dispatch(struct ps_server *s, struct MHD_Connection *c, struct req *rq)
{
	char reason[128];

	if (rq->too_big) {
		snprintf(reason, sizeof(reason), "body: larger than %zu bytes", s->cfg.body_max);
		return respond_error(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, reason);
	}
	switch (rq->route->kind) {
	case R_EXEC:
		return handle_run(s, c, rq, false);
	case R_BATCH:
		return handle_run(s, c, rq, true);
	case R_HEALTH:
		return handle_health(s, c, rq);
	case R_METRICS:
		return handle_metrics(s, c, rq);
	case R_SESSIONS:
		return dispatch_sessions(s, c, rq);
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

/* Who is asking, for the audit log: the client's X-Request-Id when it is a plain token, else
 * one of ours; the peer address; the token's id once the token checks out (dispatch). */
static void audit_who(struct ps_server *s, struct MHD_Connection *c, struct req *rq,
		      const char *url, const char *method)
{
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
	const union MHD_ConnectionInfo *ci;
	char host[48] = "unix";

	if (!s->cfg.audit)
		return;
	rq->url = url;
	rq->method = method;
	if (id && *id && strlen(id) < sizeof(rq->id) && strspn(id, "abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") == strlen(id))
		snprintf(rq->id, sizeof(rq->id), "%s", id);
	else
		ps_auditlog_new_id(rq->id, sizeof(rq->id));
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ci->client_addr;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(rq->client, sizeof(rq->client), "%s:%u", host, ntohs(in->sin_port));
	} else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ci->client_addr;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(rq->client, sizeof(rq->client), "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(rq->client, sizeof(rq->client), "unix");
	}
	rq->who = (struct ps_audit_who){ rq->id, rq->client, NULL };
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ps_server *s = cls;
	struct req *rq = *con_cls;

	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->start_us = ps_now_us();
		*con_cls = rq;
		audit_who(s, c, rq, url, method);
		if (!precheck(s, c, rq, url, method) && answer_now(c))
			return respond_error(s, c, rq, rq->reject, NULL, rq->reason);
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->route)
			take_upload(s, rq, upload, *upload_size);
		*upload_size = 0;	/* a refused request's body is dropped as it comes */
		return MHD_YES;
	}
	if (!rq->route)
		return respond_error(s, c, rq, rq->reject, NULL, rq->reason);
	return dispatch(s, c, rq);
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

/* Routes match the path as sent: MHD's default %HH decoding made "/v1%2Fexec" reach
 * /v1/exec (and would let a proxy's path rules and ours disagree). No route has an escape. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	ps_serve_vlog(fmt, ap);
}

int ps_server_start(const struct ps_server_config *cfg, struct ps_server **out, char *err,
		    size_t errlen)
{
	struct ps_accept_config ac = { .listen_fd = cfg->listen_fd, .max_conns = cfg->max_conns,
				       .max_untrusted = cfg->max_untrusted,
				       .untrusted_ms = cfg->untrusted_ms };
	struct ps_server *s = calloc(1, sizeof(*s));
	int ret;

	if (!s || !(s->slot_used = calloc(cfg->workers, sizeof(bool))) ||
	    !(s->acceptor = ps_accept_new(&ac))) {
		if (s)
			free(s->slot_used);
		free(s);
		snprintf(err, errlen, "serve: out of memory");
		return -1;
	}
	s->cfg = *cfg;
	s->sessions = ps_sessions_new(&s->cfg);
	if (!s->sessions) {
		ps_accept_free(s->acceptor);
		free(s->slot_used);
		free(s);
		snprintf(err, errlen, "serve: out of memory");
		return -1;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	/* No listening socket of MHD's own: accept.c accepts and hands sockets over. */
	s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
					MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
					MHD_USE_NO_LISTEN_SOCKET,
				0, NULL, NULL, on_request, s,
				/* first, so that every message of MHD's comes through it */
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
				on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, ps_accept_notify,
				s->acceptor, MHD_OPTION_CONNECTION_LIMIT, cfg->max_conns + 16,
				/* what a connection may hold before its request is in: headers */
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_BYTES_MAX,
				MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL,
				/* a thread per connection: small stacks, the handlers are shallow */
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 << 10), MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "MHD_start_daemon: failed (see messages above)");
		goto fail;
	}
	ret = ps_accept_run(s->acceptor, s->d);
	if (ret < 0) {
		snprintf(err, errlen, "serve: starting the accept thread: %s", strerror(-ret));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->d)
		MHD_stop_daemon(s->d);
	ps_accept_free(s->acceptor);
	ps_sessions_free(s->sessions);
	free(s->slot_used);
	free(s);
	return -1;
}

void ps_server_drain(struct ps_server *s)
{
	pthread_mutex_lock(&s->mu);
	s->draining = true;
	pthread_mutex_unlock(&s->mu);
	ps_accept_stop(s->acceptor);
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
	ps_accept_free(s->acceptor);
	ps_sessions_free(s->sessions);
	free(s->slot_used);
	free(s);
}
