/* The cells' side of the kernel: the session engine (host/session/) behind execute, complete,
 * inspect, is_complete and interrupt. The session is started in the background while the
 * sockets come up, so that kernel_info is answered at once; the first request that needs it
 * waits for it. Outputs go to iopub as the cell makes them (cell.c turns the verdict into the
 * rest: display_data, execute_result, error). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_int.h"
#include "policy/policy.h"
#include "session/session.h"
#include "util/util.h"

struct ps_kengine {
	struct ps_session_opts opts;
	pthread_t starter;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started, done;		/* under lock */
	bool logged;
	struct ps_session *_Atomic sess;	/* read by the control thread to interrupt */
	int start_rc;
	char err[256];
};

/* The thread that forks the session host lives as long as the session: the host's
 * PR_SET_PDEATHSIG fires when the thread that forked it ends, not the process. */
static void *start_main(void *arg)
{
	struct ps_kengine *e = arg;
	struct ps_session *s = NULL;
	int rc = ps_session_start(&e->opts, &s, e->err, sizeof(e->err));

	pthread_mutex_lock(&e->lock);
	e->start_rc = rc;
	if (rc == 0)
		atomic_store(&e->sess, s);
	e->started = true;
	pthread_cond_broadcast(&e->cond);
	while (!e->done)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int ps_kernel_engine_start(struct ps_kernel *k)
{
	const struct ps_kernel_opts *o = k->opts;
	struct ps_kengine *e = calloc(1, sizeof(*e));
	struct ps_policy p;
	char err[256];

	if (!e) {
		ps_err("kernel: out of memory");
		return PS_EXIT_INTERNAL;
	}
	e->opts = (struct ps_session_opts){ .policy = o->policy ? o->policy : "notebook",
					    .wall = o->wall, .cpu = o->cpu,
					    .memory = o->memory, .output = o->output,
					    .layers_off = o->layers_off, .slot = -1 };
	/* A bad policy is the command line's error, said now (exit 1), not at the first cell. */
	if (ps_policy_load(e->opts.policy, &p, err, sizeof(err)) < 0) {
		ps_err("kernel --policy: %s", err);
		free(e);
		return PS_EXIT_USAGE;
	}
	ps_policy_free(&p);
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	if (pthread_create(&e->starter, NULL, start_main, e) != 0) {
		ps_err("kernel: pthread_create: %s", strerror(errno));
		free(e);
		return PS_EXIT_INTERNAL;
	}
	k->engine = e;
	return PS_EXIT_OK;
}

/* The session, once started (shell thread only). NULL with the reason in *why. */
struct ps_session *ps_kernel_session(struct ps_kernel *k, const char **why)
{
	struct ps_kengine *e = k->engine;

	pthread_mutex_lock(&e->lock);
	while (!e->started)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	if (e->start_rc < 0 && !e->logged) {
		ps_klog("the session did not start: %s", e->err);
		e->logged = true;
	}
	*why = e->err;
	return atomic_load(&e->sess);
}

void ps_kernel_engine_stop(struct ps_kernel *k)
{
	const char *why;

	struct ps_kengine *e = k->engine;

	if (!e)
		return;
	ps_session_close(ps_kernel_session(k, &why));
	pthread_mutex_lock(&e->lock);
	e->done = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->starter, NULL);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	free(e);
	k->engine = NULL;
}

void ps_kernel_interrupt(struct ps_kernel *k)
{
	struct ps_kengine *e = k->engine;

	atomic_store(&k->interrupted, true);
	if (e) {	/* under the lock: a renewal does not close the session under us */
		pthread_mutex_lock(&e->lock);
		if (atomic_load(&e->sess))
			ps_session_interrupt(atomic_load(&e->sess));
		pthread_mutex_unlock(&e->lock);
	}
	ps_kernel_wake_shell(k);	/* a cell waiting for input stops waiting */
}

/* The session ended under the kernel (its host lost, a session limit): a new one, so that
 * the kernel goes on serving; the state is gone and the caller says so. Shell thread, which
 * lives as long as the process, so the new host's PDEATHSIG is safe. */
struct ps_session *ps_kernel_session_renew(struct ps_kernel *k, char *err, size_t errlen)
{
	struct ps_kengine *e = k->engine;
	struct ps_session *old, *s = NULL;

	pthread_mutex_lock(&e->lock);
	old = atomic_exchange(&e->sess, NULL);
	pthread_mutex_unlock(&e->lock);
	ps_session_close(old);
	if (ps_session_start(&e->opts, &s, err, errlen) < 0)
		return NULL;
	pthread_mutex_lock(&e->lock);
	atomic_store(&e->sess, s);
	pthread_mutex_unlock(&e->lock);
	return s;
}

/* ---------------------------------------------------------------- queries in a fork */

static cJSON *query(struct ps_kchan *ch, const struct ps_kmsg *m, const char *kind)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(m->body, "code");
	const cJSON *pos = cJSON_GetObjectItemCaseSensitive(m->body, "cursor_pos");
	const char *why;
	struct ps_session *s = ps_kernel_session(ch->k, &why);
	char err[256], *text;
	size_t len, cursor;
	cJSON *j;

	if (!cJSON_IsString(code)) {
		ps_klog("%s: %s_request without a code string", ch->name, kind);
		return NULL;
	}
	len = strlen(code->valuestring);
	cursor = cJSON_IsNumber(pos) && pos->valuedouble >= 0 ? (size_t)pos->valuedouble : len;
	if (!s)
		return NULL;
	text = ps_session_query(s, kind, code->valuestring, len, cursor, err, sizeof(err));
	if (!text) {
		ps_klog("%s: %s: %s", ch->name, kind, err);
		return NULL;
	}
	j = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

static void ensure(cJSON *c, const char *name, cJSON *dflt)
{
	if (!cJSON_GetObjectItemCaseSensitive(c, name))
		cJSON_AddItemToObject(c, name, dflt);
	else
		cJSON_Delete(dflt);
}

static void status_first(cJSON *c, const char *status)
{
	cJSON_DeleteItemFromObjectCaseSensitive(c, "status");
	cJSON_AddStringToObject(c, "status", status);
}

void ps_kh_is_complete(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = query(ch, m, "is_complete");

	/* The front never parses Python: when the fork cannot tell, the answer is "unknown". */
	if (!c || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "status"))) {
		cJSON_Delete(c);
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "status", "unknown");
	}
	if (!strcmp(cJSON_GetObjectItemCaseSensitive(c, "status")->valuestring, "incomplete"))
		ensure(c, "indent", cJSON_CreateString(""));
	ps_kchan_reply(ch, m, "is_complete_reply", c);
}

static void error_content(cJSON *c, const char *ename, const char *evalue)
{
	cJSON *tb = cJSON_CreateArray();
	char line[512];

	snprintf(line, sizeof(line), "%s: %s", ename, evalue);
	cJSON_AddItemToArray(tb, cJSON_CreateString(line));
	status_first(c, "error");
	cJSON_AddStringToObject(c, "ename", ename);
	cJSON_AddStringToObject(c, "evalue", evalue);
	cJSON_AddItemToObject(c, "traceback", tb);
}

void ps_kh_complete(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = query(ch, m, "complete");
	const cJSON *pos = cJSON_GetObjectItemCaseSensitive(m->body, "cursor_pos");
	int at = cJSON_IsNumber(pos) ? pos->valueint : 0;

	if (!c) {
		c = cJSON_CreateObject();
		error_content(c, "CompletionError", "the completion fork did not answer");
	} else {
		status_first(c, "ok");
	}
	ensure(c, "matches", cJSON_CreateArray());
	ensure(c, "cursor_start", cJSON_CreateNumber(at));
	ensure(c, "cursor_end", cJSON_CreateNumber(at));
	ensure(c, "metadata", cJSON_CreateObject());
	ps_kchan_reply(ch, m, "complete_reply", c);
}

void ps_kh_inspect(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = query(ch, m, "inspect");

	if (!c) {
		c = cJSON_CreateObject();
		error_content(c, "InspectError", "the inspection fork did not answer");
	} else {
		status_first(c, "ok");
	}
	ensure(c, "found", cJSON_CreateFalse());
	ensure(c, "data", cJSON_CreateObject());
	ensure(c, "metadata", cJSON_CreateObject());
	ps_kchan_reply(ch, m, "inspect_reply", c);
}
