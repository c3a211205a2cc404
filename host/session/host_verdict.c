/* A cell's answer to the front (host_cell.c runs the cell): its verdict, the run verdict of
 * result.c with the session's fields spliced in, or a query's result. */
#include "host_int.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run/result.h"
#include "sandbox/sandbox.h"
#include "util/util.h"

/* The verdict's status, from its text (ps_verdict_render writes it early, unquoted). */
void ps_host_status_of(const char *json, char *buf, size_t len)
{
	const char *p = json ? strstr(json, "\"status\":\"") : NULL;
	size_t n = p ? strcspn(p + 10, "\"") : 0;

	snprintf(buf, len, "%.*s", (int)n, p ? p + 10 : "");
}

static cJSON *report_of(const struct cell *c)
{
	const struct ps_capture *r = &c->o.report;
	size_t tl = strlen(c->h->token);
	const char *last = NULL, *p = r->buf;

	while (p && (p = memmem(p, r->len - (size_t)(p - r->buf), c->h->token, tl))) {
		last = p;
		p += tl;
	}
	if (!last)
		return NULL;
	last += tl;
	return cJSON_ParseWithLength(last, r->len - (size_t)(last - r->buf));
}

static const char *rollback_reason(const struct cell *c, const char *status, char *buf,
				   size_t len)
{
	const struct ps_limits *l = &c->r.limits;

	if (c->q->kind == PS_SCMD_QUERY)
		return "a query's fork is always discarded";
	if (c->o.host_error[0])
		snprintf(buf, len, "internal_error: %s", c->o.host_error);
	else
	if (c->int_killed)
		snprintf(buf, len, "interrupt: the cell was still running %llu ms after SIGINT and "
			 "was killed", (unsigned long long)c->h->grace_ms);
	else if (c->cpu_killed || !strcmp(status, "cpu_limit"))
		snprintf(buf, len, "cpu_limit: the cell used its %llu ms of CPU",
			 (unsigned long long)l->cpu_ms);
	else if (!strcmp(status, "timeout"))
		snprintf(buf, len, "timeout: the cell ran past its wall clock of %llu ms and was killed",
			 (unsigned long long)l->wall_ms);
	else if (!strcmp(status, "memory_limit"))
		snprintf(buf, len, "memory_limit: the cell ran out of the session's %llu bytes",
			 (unsigned long long)l->memory_bytes);
	else if (!strcmp(status, "output_limit"))
		snprintf(buf, len, "output_limit: the cell wrote more than %llu bytes and was killed",
			 (unsigned long long)l->output_bytes);
	else if (!strcmp(status, "denied"))
		snprintf(buf, len, "denied: a sandbox layer killed the cell%s%s",
			 c->o.have_syscall ? " at " : "",
			 c->o.have_syscall ? ps_syscall_name_arch(c->o.syscall_nr, c->o.syscall_arch)
					   : "");
	else if (WIFSIGNALED(c->o.wait_status))
		snprintf(buf, len, "signal: the cell died by SIG%s",
			 sigabbrev_np(WTERMSIG(c->o.wait_status)) ?: "?");
	else
		snprintf(buf, len, "%s: the cell ended without its report", status);
	return buf;
}

/* The verdict line: the run's verdict plus the session's fields, spliced into its text (the
 * verdict is not parsed again): {"event":"verdict","session_ended"?:S,"verdict":{...}}. */
int ps_host_send_verdict(struct cell *c)
{
	struct host *h = c->h;
	char *v = c->rendered ? c->rendered : ps_verdict_render(&h->p, &c->r, &c->o, false);
	cJSON *rep = c->done ? report_of(c) : NULL, *tail = cJSON_CreateObject(), *head;
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(rep, "result");
	char why[700], st[32], *t = NULL, *hd = NULL, *line = NULL;
	const char *state = "kept", *reason = NULL;
	int ret = -1;

	c->rendered = NULL;
	ps_host_status_of(v, st, sizeof(st));
	if (c->keep && h->lost[0]) {
		state = "lost";
		reason = h->lost;
	} else if (!c->keep && (c->reaped || !c->holder_dead)) {
		state = "rolled_back";
		reason = rollback_reason(c, st, why, sizeof(why));
		h->rolled_back++;
	} else if (!c->keep) {
		state = "lost";
		snprintf(why, sizeof(why), "the holder died while the cell ran (killed from inside "
			 "the session?): no state to roll back to; the next cell starts afresh");
		reason = why;
	}
	cJSON_AddNumberToObject(tail, "execution_count", (double)h->count);
	cJSON_AddStringToObject(tail, "state", state);
	if (reason)
		cJSON_AddStringToObject(tail, "state_reason", reason);
	else
		cJSON_AddNullToObject(tail, "state_reason");
	cJSON_AddItemToObject(tail, "result", cJSON_IsObject(res) ? cJSON_Duplicate(res, true)
								  : cJSON_CreateNull());
	/* threads do not outlive a cell: those still running at its end (daemon ones; the
	 * others were joined) were stopped, the state goes on in a single-threaded copy */
	if (c->keep && c->threads > 0)
		cJSON_AddNumberToObject(tail, "threads_stopped", c->shed_failed ? 0 : c->threads);
	/* "display" is the run verdict's own (result.c renders the report's, the cell's bundles) */
	head = cJSON_CreateObject();
	cJSON_AddStringToObject(head, "event", "verdict");
	if (ps_host_session_over(h, ps_now_us()))	/* the front learns it with the verdict */
		cJSON_AddStringToObject(head, "session_ended", h->ended);
	t = cJSON_PrintUnformatted(tail);
	hd = cJSON_PrintUnformatted(head);
	if (v && t && hd && v[0] == '{' && v[strlen(v) - 1] == '}' &&
	    asprintf(&line, "%.*s,\"verdict\":%.*s,%s}", (int)strlen(hd) - 1, hd,
		     (int)strlen(v) - 1, v, t + 1) < 0)
		line = NULL;
	ret = line ? ps_host_send(h, line)
		   : ps_host_send(h, "{\"event\":\"error\",\"message\":\"verdict: out of memory\"}");
	free(line);
	free(t);
	free(hd);
	free(v);
	cJSON_Delete(tail);
	cJSON_Delete(head);
	cJSON_Delete(rep);
	return ret;
}

int ps_host_send_query(struct cell *c)
{
	cJSON *rep = c->done ? report_of(c) : NULL, *m = cJSON_CreateObject();
	char *line;
	int ret;

	cJSON_AddStringToObject(m, "event", "query");
	if (rep) {
		cJSON_AddItemToObject(m, "result", rep);
	} else {
		cJSON_AddNullToObject(m, "result");
		cJSON_AddStringToObject(m, "error", c->o.timed_out ? "the query timed out"
								   : "the query's fork died");
	}
	line = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	ret = line ? ps_host_send(c->h, line) : -1;
	free(line);
	return ret;
}
