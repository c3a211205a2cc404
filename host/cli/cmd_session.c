/* `pysnip session`: a session (session/session.h) on JSON lines.
 *   in:  {"id": ID, "code": S, "limits"?: {...}}   {"interrupt": ID}   {"restart": true}
 *        {"id": ID, "query": "complete"|"inspect"|"is_complete", "code": S, "cursor"?: N}
 *        {"input": S|null} (the answer to an input_request; null refuses: EOFError)
 *   out: {"id": ID, "event": "stdout"|"stderr", "text": S} while the cell runs,
 *        {"id": ID, "event": "display", "data": BUNDLE}, {"id": ID, "event": "clear_output",
 *        "wait": B} (clear_output() in the cell), then {"id": ID, "event": "verdict",
 *        "verdict": {...}}; {"id", "event": "input_request", "prompt"}; {"id", "event":
 *        "query", "result": {...}}; {"event": "restarted"}; {"event": "ended", "reason": S};
 *        {"id"?: ID, "event": "error", "field": F, "message": S} for a line that is wrong.
 * The main thread reads stdin (so that an interrupt reaches a running cell); cells and
 * restarts run in order on a second thread. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "policy/policy.h"
#include "run/result.h"
#include "session/session.h"
#include "session_line.h"
#include "util/util.h"

struct job {
	struct job *next;
	cJSON *id;		/* NULL: a restart */
	char *code;
	char *limits;
	char *query;		/* "complete", "inspect", "is_complete": a query, not a cell */
	size_t cursor;
};

static struct {
	pthread_mutex_t mu, out_mu;
	pthread_cond_t cv;
	struct job *head, *tail;
	bool eof, ended;
	cJSON *running;		/* the id of the cell running now */
	struct ps_session *s;
	pthread_cond_t input_cv;	/* an {"input": ...} line came (input_value) */
	bool input_wanted, input_given;
	char *input_value;	/* NULL with input_given: refused */
} q = { .mu = PTHREAD_MUTEX_INITIALIZER, .out_mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER, .input_cv = PTHREAD_COND_INITIALIZER };

/* One output line, whole, under the lock: events of the runner and errors of the reader. */
static void emit(cJSON *m, const cJSON *id)
{
	char *line;

	if (id)
		cJSON_AddItemToObject(m, "id", cJSON_Duplicate(id, true));
	line = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (!line)
		return;
	pthread_mutex_lock(&q.out_mu);
	fputs(line, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&q.out_mu);
	free(line);
}

static void emit_error(const cJSON *id, const char *field, const char *msg)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "event", "error");
	if (field)
		cJSON_AddStringToObject(m, "field", field);
	cJSON_AddStringToObject(m, "message", msg);
	emit(m, id);
}

static void on_stream(void *ctx, const char *name, const char *data, size_t len)
{
	cJSON *m = cJSON_CreateObject();
	/* the bytes quoted as in a verdict: a byte that is not UTF-8 is \udcXX */
	char *t = ps_json_quote_bytes(data, len);

	cJSON_AddStringToObject(m, "event", name);
	cJSON_AddRawToObject(m, "text", t ? t : "\"\"");
	free(t);
	emit(m, ctx);
}

/* A display() bundle; or a cell's clear_output(wait=...), which the engine passes the same
 * way ({"clear_output": {"wait": B}}) and which is its own event here:
 * {"event": "clear_output", "wait": B}, in its place among the cell's outputs. */
static void on_display(void *ctx, const char *bundle)
{
	cJSON *m = cJSON_CreateObject(), *d = cJSON_Parse(bundle);
	cJSON *clear = cJSON_GetObjectItemCaseSensitive(d, "clear_output");

	if (cJSON_IsObject(clear) && !cJSON_GetObjectItemCaseSensitive(d, "data")) {
		cJSON_AddStringToObject(m, "event", "clear_output");
		cJSON_AddBoolToObject(m, "wait",
				      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(clear, "wait")));
		cJSON_Delete(d);
	} else {
		cJSON_AddStringToObject(m, "event", "display");
		cJSON_AddItemToObject(m, "data", d ?: cJSON_CreateNull());
	}
	emit(m, ctx);
}

/* input() in the cell: ask on stdout, wait for {"input": S} (or {"input": null}: refused). */
static char *on_input(void *ctx, const char *prompt, bool password)
{
	cJSON *m = cJSON_CreateObject();
	char *v;

	cJSON_AddStringToObject(m, "event", "input_request");
	cJSON_AddStringToObject(m, "prompt", prompt);
	cJSON_AddBoolToObject(m, "password", password);
	pthread_mutex_lock(&q.mu);
	q.input_wanted = true;
	q.input_given = false;
	pthread_mutex_unlock(&q.mu);
	emit(m, ctx);
	pthread_mutex_lock(&q.mu);
	while (!q.input_given && !q.eof)
		pthread_cond_wait(&q.input_cv, &q.mu);
	v = q.input_given ? q.input_value : NULL;
	q.input_value = NULL;
	q.input_wanted = q.input_given = false;
	pthread_mutex_unlock(&q.mu);
	return v;
}

static void run_query(struct job *j)
{
	char err[600];
	char *r = ps_session_query(q.s, j->query, j->code, strlen(j->code), j->cursor, err,
				   sizeof(err));
	cJSON *m;

	if (!r) {
		emit_error(j->id, "query", err);
		return;
	}
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "event", "query");
	cJSON_AddItemToObject(m, "result", cJSON_Parse(r) ?: cJSON_CreateNull());
	free(r);
	emit(m, j->id);
}

static void run_job(struct job *j)
{
	char err[600];
	cJSON *m = cJSON_CreateObject();

	if (!j->id) {
		if (ps_session_restart(q.s, err, sizeof(err)) == 0) {
			cJSON_AddStringToObject(m, "event", "restarted");
			emit(m, NULL);
		} else {
			cJSON_Delete(m);
			emit_error(NULL, "restart", err);
		}
		return;
	}
	if (j->query) {
		cJSON_Delete(m);
		run_query(j);
		return;
	}
	struct ps_session_cb cb = { .ctx = j->id, .stream = on_stream, .display = on_display,
				    .input = on_input };
	char *v = ps_session_exec(q.s, j->code, strlen(j->code), j->limits, &cb, err, sizeof(err));

	if (v) {
		cJSON_AddStringToObject(m, "event", "verdict");
		/* as the host wrote it: output that is not UTF-8 stays \udcXX (surrogateescape, as
		 * in every verdict), which cJSON would refuse to parse back */
		cJSON_AddRawToObject(m, "verdict", v);
		emit(m, j->id);
		free(v);
	} else {
		cJSON_Delete(m);
		emit_error(j->id, !strncmp(err, "limits", 6) ? "limits" : NULL, err);
	}
}

static void announce_end(void)
{
	cJSON *m = cJSON_CreateObject();

	q.ended = true;
	cJSON_AddStringToObject(m, "event", "ended");
	cJSON_AddStringToObject(m, "reason", ps_session_ended(q.s));
	emit(m, NULL);
}

static void *runner(void *unused)
{
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&q.mu);
		while (!q.head && !q.eof) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 200 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			/* between cells: the session may end by itself (idle, lifetime) */
			if (pthread_cond_timedwait(&q.cv, &q.mu, &ts) != 0 && !q.ended &&
			    ps_session_wait_ended(q.s, 0))
				announce_end();
		}
		j = q.head;
		if (!j) {
			pthread_mutex_unlock(&q.mu);
			return NULL;
		}
		q.head = j->next;
		if (!q.head)
			q.tail = NULL;
		q.running = j->id;
		pthread_mutex_unlock(&q.mu);
		run_job(j);
		pthread_mutex_lock(&q.mu);
		q.running = NULL;
		pthread_mutex_unlock(&q.mu);
		if (ps_session_ended(q.s) && !q.ended)
			announce_end();
		cJSON_Delete(j->id);
		free(j->code);
		free(j->limits);
		free(j->query);
		free(j);
	}
}

static void push(struct job *j)
{
	pthread_mutex_lock(&q.mu);
	if (q.tail)
		q.tail->next = j;
	else
		q.head = j;
	q.tail = j;
	pthread_cond_signal(&q.cv);
	pthread_mutex_unlock(&q.mu);
}

static void on_interrupt(const cJSON *id)
{
	bool hit;

	pthread_mutex_lock(&q.mu);
	hit = q.running && cJSON_Compare(q.running, id, true);
	pthread_mutex_unlock(&q.mu);
	if (hit)
		ps_session_interrupt(q.s);
	else
		emit_error(id, "interrupt", "interrupt: no cell with this id is running");
}

/* An input() answer: value is taken (malloc'd; NULL: refused, the cell gets EOFError). */
static void take_input(const cJSON *id, char *value)
{
	bool ok;

	pthread_mutex_lock(&q.mu);
	ok = q.input_wanted && !q.input_given;
	if (ok) {
		q.input_value = value;
		q.input_given = true;
		pthread_cond_signal(&q.input_cv);
	}
	pthread_mutex_unlock(&q.mu);
	if (!ok) {
		free(value);
		emit_error(id, "input", "input: no cell is waiting for input (or not a string/null)");
	}
}

/* One input line (session_line.c parses it): a cell, a query, an input() answer, an
 * interrupt or a restart; anything else is an error line. */
static void take_line(const char *line, size_t len)
{
	struct ps_session_line l;
	struct job *j;

	switch (ps_session_line_parse(line, len, &l)) {
	case PS_SLINE_ERROR:
		emit_error(l.id, l.field, l.message);
		break;
	case PS_SLINE_INTERRUPT:
		on_interrupt(l.id);
		break;
	case PS_SLINE_INPUT:
		take_input(l.id, l.input);
		l.input = NULL;
		break;
	case PS_SLINE_RESTART:	/* a job without an id */
	case PS_SLINE_CELL:
	case PS_SLINE_QUERY:
		if (!(j = calloc(1, sizeof(*j))))
			break;
		j->id = l.id;
		j->code = l.code;
		j->limits = l.limits;
		j->query = l.query;
		j->cursor = l.cursor;
		l.id = NULL;
		l.code = l.limits = l.query = NULL;
		push(j);
		break;
	}
	ps_session_line_free(&l);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pysnip session [--policy NAME|PATH] [--wall T] [--cpu T] [--memory SIZE]\n"
		   "       [--output SIZE] [--idle T] [--lifetime T] [--session-cpu T] [--cells N]\n"
		   "       [--disable-layer LAYER]...\n"
		   "JSON lines on stdin: {\"id\", \"code\", \"limits\"?}, {\"interrupt\": id}, "
		   "{\"restart\": true};\nevents and each cell's verdict on stdout.\n");
}

static int parse(int argc, char **argv, struct ps_session_opts *o)
{
	static const struct option opts[] = {
		{ "policy", 1, NULL, 'p' }, { "wall", 1, NULL, 'w' }, { "cpu", 1, NULL, 'c' },
		{ "memory", 1, NULL, 'm' }, { "output", 1, NULL, 'o' }, { "idle", 1, NULL, 'I' },
		{ "lifetime", 1, NULL, 'L' }, { "session-cpu", 1, NULL, 'C' },
		{ "cells", 1, NULL, 'N' }, { "disable-layer", 1, NULL, 'd' },
		{ "help", 0, NULL, 'h' }, { 0 },
	};
	char err[256];
	int c, l;

	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "h", opts, NULL)) != -1) {
		uint64_t *ms = c == 'I' ? &o->session.idle_ms : c == 'L' ? &o->session.lifetime_ms :
			       c == 'C' ? &o->session.cpu_ms : NULL;

		if (c == 'h') {
			usage(stdout);
			exit(PS_EXIT_OK);
		} else if (c == 'p') {
			o->policy = optarg;
		} else if (c == 'w' || c == 'c' || c == 'm' || c == 'o') {
			*(c == 'w' ? &o->wall : c == 'c' ? &o->cpu : c == 'm' ? &o->memory
									    : &o->output) = optarg;
		} else if (c == 'N') {
			char *end;

			o->session.cells = strtoull(optarg, &end, 10);
			if (*end || !*optarg) {
				ps_err("--cells %s: not a number", optarg);
				return -1;
			}
		} else if (c == 'd') {
			if ((l = ps_layer_from_name(optarg)) < 0) {
				ps_err("--disable-layer %s: no such layer", optarg);
				return -1;
			}
			o->layers_off |= 1u << l;
		} else if (ms) {
			if (ps_parse_duration_ms(optarg, ms, err, sizeof(err)) < 0) {
				ps_err("%s: %s", optarg, err);
				return -1;
			}
		} else {
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc + 1) {
		ps_err("session: unexpected argument '%s'", argv[optind - 1]);
		return -1;
	}
	return 0;
}

int ps_cmd_session(int argc, char **argv)
{
	struct ps_session_opts o = { .slot = -1 };
	char err[600], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	pthread_t t;

	if (parse(argc, argv, &o) < 0)
		return PS_EXIT_USAGE;
	if (ps_session_start(&o, &q.s, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		return !strncmp(err, "policy ", 7) ? PS_EXIT_USAGE : PS_EXIT_INTERNAL;
	}
	if (pthread_create(&t, NULL, runner, NULL) != 0) {
		ps_session_close(q.s);
		ps_err("pthread_create: failed");
		return PS_EXIT_INTERNAL;
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[strspn(line, " \t\r\n")])
			take_line(line, (size_t)n);
	}
	free(line);
	pthread_mutex_lock(&q.mu);
	q.eof = true;
	pthread_cond_signal(&q.cv);
	pthread_cond_signal(&q.input_cv);
	pthread_mutex_unlock(&q.mu);
	pthread_join(t, NULL);
	ps_session_close(q.s);
	return PS_EXIT_OK;
}
