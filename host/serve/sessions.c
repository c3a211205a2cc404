/* Served sessions (DESIGN.md section 6, the LLM code interpreter's "context"): the routes
 * under /v1/sessions and the table of live sessions. Each session is a fork of its policy's
 * zygote (ps_zygote_session: no interpreter start), reached through a struct ps_session.
 *   POST   /v1/sessions            {"policy"?, "limits"?, "session"?}  -> 201 {"id", ...}
 *   POST   /v1/sessions/ID/exec    {"code", "limits"?}                 -> the cell's verdict
 *   POST   /v1/sessions/ID/interrupt                                   -> {"interrupted"}
 *   GET    /v1/sessions/ID                                             -> what it is
 *   DELETE /v1/sessions/ID                                             -> {"deleted"}
 * Ids are 128 random bits. A full table answers 429; sessions idle past their limit end by
 * themselves (their host's idle timeout) and are reaped here. */
#include "sessions.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "session/session.h"
#include "util/util.h"

enum { ID_LEN = 32, REAP_EVERY_MS = 500 };

struct entry {
	char id[ID_LEN + 1];
	struct ps_session *s;
	size_t policy;
	uint64_t created_us, last_us, cells;
	unsigned refs;		/* requests using it now */
	bool doomed;		/* deleted or ended: closed by its last user */
};

struct ps_sessions {
	const struct ps_server_config *cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct entry **e;
	size_t n, cap;
	unsigned max;
	uint64_t created, ended, rolled_back, cells, refused;
	pthread_t reaper;
	bool stop;
};

static char *json_error(const char *field, const char *reason)
{
	cJSON *m = cJSON_CreateObject();
	char *out;

	cJSON_AddStringToObject(m, "error", reason);
	if (field)
		cJSON_AddStringToObject(m, "field", field);
	else
		cJSON_AddNullToObject(m, "field");
	out = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return out;
}

/* --- the table --- */

static struct entry *find_ref(struct ps_sessions *ss, const char *id)
{
	struct entry *found = NULL;

	pthread_mutex_lock(&ss->mu);
	for (size_t i = 0; i < ss->n && !found; i++)
		if (!ss->e[i]->doomed && !strcmp(ss->e[i]->id, id))
			found = ss->e[i];
	if (found)
		found->refs++;
	pthread_mutex_unlock(&ss->mu);
	return found;
}

/* Drop a reference; a doomed entry's last user closes it (outside the lock). */
static void unref(struct ps_sessions *ss, struct entry *e)
{
	bool close_it;

	pthread_mutex_lock(&ss->mu);
	e->refs--;
	e->last_us = ps_now_us();
	close_it = e->doomed && e->refs == 0;
	if (close_it) {
		for (size_t i = 0; i < ss->n; i++)
			if (ss->e[i] == e)
				ss->e[i] = ss->e[--ss->n];
		ss->ended++;
	}
	pthread_mutex_unlock(&ss->mu);
	if (close_it) {
		ps_session_close(e->s);
		free(e);
	}
}

static void doom(struct ps_sessions *ss, struct entry *e)
{
	pthread_mutex_lock(&ss->mu);
	e->doomed = true;
	pthread_mutex_unlock(&ss->mu);
}

/* Sessions that ended by themselves (idle timeout, lifetime): gone from the table. */
static void *reaper_main(void *arg)
{
	struct ps_sessions *ss = arg;

	for (;;) {
		struct entry **idle;
		size_t n = 0;

		usleep(REAP_EVERY_MS * 1000);
		pthread_mutex_lock(&ss->mu);
		if (ss->stop) {
			pthread_mutex_unlock(&ss->mu);
			return NULL;
		}
		idle = malloc((ss->n + 1) * sizeof(*idle));
		for (size_t i = 0; idle && i < ss->n; i++) {
			if (ss->e[i]->refs || ss->e[i]->doomed)
				continue;
			ss->e[i]->refs++;
			idle[n++] = ss->e[i];
		}
		pthread_mutex_unlock(&ss->mu);
		for (size_t i = 0; i < n; i++) {
			if (ps_session_wait_ended(idle[i]->s, 0))
				doom(ss, idle[i]);
			unref(ss, idle[i]);
		}
		free(idle);
	}
}

struct ps_sessions *ps_sessions_new(const struct ps_server_config *cfg)
{
	struct ps_sessions *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	ss->cfg = cfg;
	ss->max = cfg->max_sessions ? cfg->max_sessions : PS_SESSIONS_DEFAULT_MAX;
	pthread_mutex_init(&ss->mu, NULL);
	pthread_cond_init(&ss->cv, NULL);
	if (pthread_create(&ss->reaper, NULL, reaper_main, ss) != 0) {
		free(ss);
		return NULL;
	}
	return ss;
}

void ps_sessions_free(struct ps_sessions *ss)
{
	if (!ss)
		return;
	pthread_mutex_lock(&ss->mu);
	ss->stop = true;
	pthread_mutex_unlock(&ss->mu);
	pthread_join(ss->reaper, NULL);
	for (size_t i = 0; i < ss->n; i++) {
		ps_session_close(ss->e[i]->s);
		free(ss->e[i]);
	}
	free(ss->e);
	free(ss);
}

/* --- the routes --- */

static unsigned create(struct ps_sessions *ss, const char *body, size_t len, char **out)
{
	struct ps_session_create c;
	struct ps_bad b;
	struct entry *e = NULL;
	char err[600];
	unsigned char raw[ID_LEN / 2];
	size_t pi;
	int full;

	if (ps_sessions_parse_create(ss->cfg->policies, ss->cfg->n, body, len, &c, &b) < 0) {
		*out = json_error(b.field[0] ? b.field : NULL, b.reason);
		return 400;
	}
	pi = c.policy;
	/* a place in the table first, so that a full server never forks */
	pthread_mutex_lock(&ss->mu);
	full = ss->n >= ss->max;
	if (!full && ss->n == ss->cap) {
		size_t cap = ss->cap ? 2 * ss->cap : 16;
		struct entry **ne = realloc(ss->e, cap * sizeof(*ne));

		if (ne) {
			ss->e = ne;
			ss->cap = cap;
		}
		full = !ne;
	}
	if (!full && (e = calloc(1, sizeof(*e)))) {
		e->refs = 1;
		e->doomed = true;	/* invisible until it is up */
		ss->e[ss->n++] = e;
	}
	if (full)
		ss->refused++;
	pthread_mutex_unlock(&ss->mu);
	if (full || !e) {
		*out = json_error(NULL, full ? "every session place is taken (--max-sessions); "
					       "end one or retry later" : "out of memory");
		return full ? 429 : 500;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
	    ps_zygote_session(&ss->cfg->zygotes[pi], &c.limits, &c.session, &e->s, err, sizeof(err)) < 0) {
		if (!e->s && !err[0])
			snprintf(err, sizeof(err), "getrandom(): %s", strerror(errno));
		unref(ss, e);
		*out = json_error(NULL, err);
		return 500;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(e->id + 2 * i, 3, "%02x", raw[i]);
	e->policy = pi;
	e->created_us = e->last_us = ps_now_us();
	pthread_mutex_lock(&ss->mu);
	e->doomed = false;
	ss->created++;
	pthread_mutex_unlock(&ss->mu);

	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "id", e->id);
	cJSON_AddStringToObject(r, "policy", ss->cfg->policies[pi].name);
	cJSON_AddItemToObject(r, "limits", ps_limits_to_cjson(&c.limits));
	cJSON *sj = cJSON_AddObjectToObject(r, "session");
	cJSON_AddNumberToObject(sj, "idle_ms", (double)c.session.idle_ms);
	cJSON_AddNumberToObject(sj, "lifetime_ms", (double)c.session.lifetime_ms);
	cJSON_AddNumberToObject(sj, "cpu_ms", (double)c.session.cpu_ms);
	cJSON_AddNumberToObject(sj, "cells", (double)c.session.cells);
	*out = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	unref(ss, e);
	return 201;
}

static unsigned exec_cell(struct ps_sessions *ss, struct entry *e, const char *body, size_t len,
			  char **out)
{
	struct ps_session_cell c;
	struct ps_bad b;
	char err[600], *v;

	if (ps_sessions_parse_exec(body, len, &c, &b) < 0) {
		*out = json_error(b.field[0] ? b.field : NULL, b.reason);
		return 400;
	}
	v = ps_session_exec(e->s, c.code, c.len, c.limits, NULL, err, sizeof(err));
	ps_sessions_cell_free(&c);
	if (!v) {
		bool ended = !strncmp(err, "session ended", 13);

		if (ended)
			doom(ss, e);
		*out = json_error(ended ? NULL : "limits", err);
		return ended ? 410 : 400;
	}
	pthread_mutex_lock(&ss->mu);
	ss->cells++;
	e->cells++;
	if (strstr(v, "\"state\":\"rolled_back\""))
		ss->rolled_back++;
	pthread_mutex_unlock(&ss->mu);
	if (ps_session_ended(e->s))	/* the cell used up a session limit */
		doom(ss, e);
	*out = v;
	return 200;
}

static unsigned describe(struct ps_sessions *ss, struct entry *e, char **out)
{
	cJSON *r = cJSON_CreateObject();
	uint64_t now = ps_now_us();

	cJSON_AddStringToObject(r, "id", e->id);
	cJSON_AddStringToObject(r, "policy", ss->cfg->policies[e->policy].name);
	cJSON_AddNumberToObject(r, "cells", (double)e->cells);
	cJSON_AddNumberToObject(r, "age_ms", (double)((now - e->created_us) / 1000));
	cJSON_AddNumberToObject(r, "idle_ms", (double)((now - e->last_us) / 1000));
	cJSON_AddBoolToObject(r, "busy", e->refs > 1);
	*out = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	return 200;
}

unsigned ps_sessions_route(struct ps_sessions *ss, const char *method, const char *url,
			   const char *body, size_t len, char **out)
{
	const char *rest = url + strlen("/v1/sessions");
	char id[ID_LEN + 1];
	const char *verb;
	struct entry *e;
	unsigned code;

	*out = NULL;
	if (!*rest || !strcmp(rest, "/")) {
		if (strcmp(method, "POST")) {
			*out = json_error(NULL, "/v1/sessions: method not allowed (use POST)");
			return 405;
		}
		return create(ss, body, len, out);
	}
	verb = strchr(rest + 1, '/');
	if (rest[0] != '/' || (size_t)((verb ? verb : rest + strlen(rest)) - rest - 1) != ID_LEN) {
		*out = json_error(NULL, "no such session");
		return 404;
	}
	memcpy(id, rest + 1, ID_LEN);
	id[ID_LEN] = '\0';
	e = find_ref(ss, id);
	if (!e) {
		*out = json_error(NULL, "no such session (ended, deleted or never made)");
		return 404;
	}
	if (!verb && !strcmp(method, "GET")) {
		code = describe(ss, e, out);
	} else if (!verb && !strcmp(method, "DELETE")) {
		doom(ss, e);
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "deleted", id);
		*out = cJSON_PrintUnformatted(r);
		cJSON_Delete(r);
		code = 200;
	} else if (verb && !strcmp(verb, "/exec") && !strcmp(method, "POST")) {
		code = exec_cell(ss, e, body ? body : "", len, out);
	} else if (verb && !strcmp(verb, "/interrupt") && !strcmp(method, "POST")) {
		code = ps_session_interrupt(e->s) == 0 ? 200 : 410;
		*out = strdup(code == 200 ? "{\"interrupted\":true}" :
			      "{\"error\":\"session ended\",\"field\":null}");
	} else {
		*out = json_error(NULL, "no such endpoint (GET/DELETE /v1/sessions/ID, POST "
					"/v1/sessions/ID/exec, POST /v1/sessions/ID/interrupt)");
		code = verb ? 404 : 405;
	}
	unref(ss, e);
	return code;
}

void ps_sessions_metrics(struct ps_sessions *ss, FILE *f)
{
	size_t live = 0;

	pthread_mutex_lock(&ss->mu);
	for (size_t i = 0; i < ss->n; i++)
		live += !ss->e[i]->doomed;
	fprintf(f, "# HELP pysnip_sessions_live Sessions alive now.\n"
		   "# TYPE pysnip_sessions_live gauge\npysnip_sessions_live %zu\n"
		   "# HELP pysnip_sessions_created_total Sessions created.\n"
		   "# TYPE pysnip_sessions_created_total counter\n"
		   "pysnip_sessions_created_total %llu\n"
		   "# HELP pysnip_sessions_refused_total Session creations refused (table full).\n"
		   "# TYPE pysnip_sessions_refused_total counter\n"
		   "pysnip_sessions_refused_total %llu\n"
		   "# HELP pysnip_sessions_ended_total Sessions ended (deleted, limits, idle).\n"
		   "# TYPE pysnip_sessions_ended_total counter\npysnip_sessions_ended_total %llu\n"
		   "# HELP pysnip_session_cells_total Cells run in sessions.\n"
		   "# TYPE pysnip_session_cells_total counter\npysnip_session_cells_total %llu\n"
		   "# HELP pysnip_session_rolled_back_total Cells rolled back.\n"
		   "# TYPE pysnip_session_rolled_back_total counter\n"
		   "pysnip_session_rolled_back_total %llu\n",
		live, (unsigned long long)ss->created, (unsigned long long)ss->refused,
		(unsigned long long)ss->ended, (unsigned long long)ss->cells,
		(unsigned long long)ss->rolled_back);
	pthread_mutex_unlock(&ss->mu);
}
