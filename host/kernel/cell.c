/* execute_request: one cell in the session engine, its outputs on iopub in ipykernel's order
 * (execute_input, stream as it happens, display_data, execute_result, error), the reply on
 * shell before the dispatcher's idle. A cell that dies (a limit, a sandbox kill) gets an error
 * naming why, and the engine has rolled its state back. input() asks the front end on stdin. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kernel_int.h"
#include "session/session.h"

struct cell {
	struct ps_kchan *ch;
	const struct ps_kmsg *m;
	bool silent, allow_stdin;
	struct ps_kutf8 out, err;
	size_t ndisplay;		/* bundles already published by the display callback */
	char *result_text;		/* the result's text/plain, for the history */
	struct ps_krecv *stdin_store;
};

static void publish_json(struct cell *x, const char *type, cJSON *c)
{
	char *text = cJSON_PrintUnformatted(c);

	if (text)
		ps_kchan_publish(x->ch, &x->m->header, type, text);
	cJSON_free(text);
	cJSON_Delete(c);
}

static void publish_stream(struct cell *x, const char *name, const char *text)
{
	cJSON *c;

	if (x->silent || !*text)
		return;
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", name);
	cJSON_AddStringToObject(c, "text", text);
	publish_json(x, "stream", c);
}

static void on_stream(void *ctx, const char *name, const char *data, size_t len)
{
	struct cell *x = ctx;
	bool is_err = !strcmp(name, "stderr");
	char *text = ps_kutf8_take(is_err ? &x->err : &x->out, data, len, false);

	if (text)
		publish_stream(x, is_err ? "stderr" : "stdout", text);
	free(text);
}

static void flush_streams(struct cell *x)
{
	char *o = ps_kutf8_take(&x->out, "", 0, true), *e = ps_kutf8_take(&x->err, "", 0, true);

	if (o)
		publish_stream(x, "stdout", o);
	if (e)
		publish_stream(x, "stderr", e);
	free(o);
	free(e);
}

/* A MIME bundle as display_data / execute_result content: data and metadata, both objects. */
static cJSON *bundle_content(const cJSON *b)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(b, "data");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(b, "metadata");
	cJSON *c;

	if (!cJSON_IsObject(data))
		return NULL;
	c = cJSON_CreateObject();
	cJSON_AddItemToObject(c, "data", cJSON_Duplicate(data, 1));
	cJSON_AddItemToObject(c, "metadata", cJSON_IsObject(meta) ? cJSON_Duplicate(meta, 1)
								  : cJSON_CreateObject());
	return c;
}

static void publish_display(struct cell *x, const cJSON *bundle)
{
	cJSON *c = bundle_content(bundle);

	if (!c || x->silent) {
		cJSON_Delete(c);
		return;
	}
	cJSON_AddItemToObject(c, "transient", cJSON_CreateObject());
	publish_json(x, "display_data", c);
}

/* clear_output(wait) in the cell (pyshim/cell.py): a frame {"clear_output": {"wait": b}}
 * among the display ones, not one of the verdict's bundles. */
static bool publish_clear(struct cell *x, const cJSON *b)
{
	const cJSON *clear = cJSON_GetObjectItemCaseSensitive(b, "clear_output");
	cJSON *c;

	if (!cJSON_IsObject(clear) || cJSON_GetObjectItemCaseSensitive(b, "data"))
		return false;
	if (!x->silent) {
		c = cJSON_CreateObject();
		cJSON_AddBoolToObject(c, "wait", cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(clear, "wait")));
		publish_json(x, "clear_output", c);
	}
	return true;
}

static void on_display(void *ctx, const char *bundle_json)
{
	struct cell *x = ctx;
	cJSON *b = cJSON_Parse(bundle_json);

	flush_streams(x);	/* what the cell printed before display() shows before it */
	if (!publish_clear(x, b)) {
		publish_display(x, b);
		x->ndisplay++;
	}
	cJSON_Delete(b);
}

/* ---------------------------------------------------------------- input() */

static char *wait_input_reply(struct cell *x)
{
	struct ps_kernel *k = x->ch->k;
	zmq_pollitem_t items[2] = { { k->stdin_sock, 0, ZMQ_POLLIN, 0 },
				    { k->wake_rx, 0, ZMQ_POLLIN, 0 } };
	struct ps_kmsg r;
	char c;

	while (!atomic_load(&k->stopping) && !atomic_load(&k->interrupted)) {
		if (zmq_poll(items, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (items[1].revents & ZMQ_POLLIN)
			while (zmq_recv(k->wake_rx, &c, 1, ZMQ_DONTWAIT) >= 0)
				;
		if (!(items[0].revents & ZMQ_POLLIN))
			continue;
		if (ps_kchan_recv(x->ch, k->stdin_sock, &x->stdin_store, &r) != 0)
			continue;
		if (!strcmp(r.msg_type, "input_reply")) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r.body, "value");
			char *line = strdup(cJSON_IsString(v) ? v->valuestring : "");

			ps_kmsg_free(&r);
			return line;
		}
		ps_klog("stdin: unexpected %.64s while waiting for input_reply", r.msg_type);
		ps_kmsg_free(&r);
	}
	return NULL;
}

static char *on_input(void *ctx, const char *prompt, bool password)
{
	struct cell *x = ctx;
	cJSON *c;
	char *text;

	flush_streams(x);
	if (!x->allow_stdin) {
		publish_stream(x, "stderr", "input(): this front end does not take input "
			       "(execute_request allow_stdin is false): EOFError\n");
		return NULL;
	}
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "prompt", prompt ? prompt : "");
	cJSON_AddBoolToObject(c, "password", password);
	text = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	if (!text || ps_kchan_send(x->ch, x->ch->k->stdin_sock, x->m->ids, x->m->nids,
				   &x->m->header, "input_request", text) < 0) {
		cJSON_free(text);
		return NULL;
	}
	cJSON_free(text);
	return wait_input_reply(x);
}

/* ---------------------------------------------------------------- the verdict */

/* A cell that did not end on its own: the Jupyter error's name for each verdict status. */
static const struct death {
	const char *status, *ename, *what;
} deaths[] = {
	{ "timeout", "TimeLimit", "the cell ran past its wall-clock limit" },
	{ "cpu_limit", "CPULimit", "the cell used up its CPU-time limit" },
	{ "memory_limit", "MemoryLimit", "the cell went over its memory limit" },
	{ "output_limit", "OutputLimit", "the cell wrote more than its output limit" },
	{ "signal", "Signal", "the cell was killed by a signal" },
	{ "internal_error", "InternalError", "pysnip failed to run the cell" },
	{ "denied", "SandboxDenied", "the sandbox stopped the cell" },
};

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static void add_line(cJSON *tb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_line(cJSON *tb, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(tb, cJSON_CreateString(line));
}

/* ename, evalue and traceback of an uncaught exception, the frames as Python prints them. */
static void exception_error(const cJSON *v, cJSON *err)
{
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(v, "exception");
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(ex, "traceback"), *f;
	cJSON *tb = cJSON_CreateArray();
	char lineno[24];

	if (cJSON_GetArraySize(frames) > 0)
		cJSON_AddItemToArray(tb, cJSON_CreateString("Traceback (most recent call last):"));
	cJSON_ArrayForEach(f, frames) {
		const cJSON *ln = cJSON_GetObjectItemCaseSensitive(f, "line");
		char where[600];

		snprintf(lineno, sizeof(lineno), "%d", cJSON_IsNumber(ln) ? ln->valueint : 0);
		snprintf(where, sizeof(where), "  File \"%.200s\", line %s, in %.200s",
			 str(f, "file"), lineno, str(f, "function"));
		if (*str(f, "text"))
			add_line(tb, "%s\n    %s", where, str(f, "text"));
		else
			add_line(tb, "%s", where);
	}
	add_line(tb, "%s: %s", str(ex, "type"), str(ex, "message"));
	cJSON_AddStringToObject(err, "ename", *str(ex, "type") ? str(ex, "type") : "Exception");
	cJSON_AddStringToObject(err, "evalue", str(ex, "message"));
	cJSON_AddItemToObject(err, "traceback", tb);
}

/* "SeccompDenied: socket" for a seccomp kill, and so on for the other layers. */
static void death_name(const cJSON *v, const struct death *d, char *ename, size_t elen,
		       char *what, size_t wlen)
{
	const cJSON *den = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "denials"), 0);
	const char *layer = str(den, "layer");

	snprintf(ename, elen, "%s", d->ename);
	snprintf(what, wlen, "%s", d->what);
	if (!strcmp(d->status, "denied") && *layer) {
		snprintf(ename, elen, "%c%sDenied", layer[0] - 'a' + 'A', layer + 1);
		snprintf(what, wlen, "%s", str(den, "event"));
		if (*str(den, "detail"))
			snprintf(what + strlen(what), wlen - strlen(what), " (%s)",
				 str(den, "detail"));
	} else if (!strcmp(d->status, "signal")) {
		const cJSON *sig = cJSON_GetObjectItemCaseSensitive(v, "signal");

		if (cJSON_IsNumber(sig))
			snprintf(what + strlen(what), wlen - strlen(what), " (%s)",
				 strsignal(sig->valueint));
	}
}

static void death_error(const cJSON *v, const struct death *d, cJSON *err)
{
	const char *state = str(v, "state"), *reason = str(v, "state_reason");
	char ename[64], what[400], evalue[1024];
	cJSON *tb = cJSON_CreateArray();

	death_name(v, d, ename, sizeof(ename), what, sizeof(what));
	if (!strcmp(state, "rolled_back"))
		snprintf(evalue, sizeof(evalue), "%s; the state is rolled back to before this cell",
			 what);
	else if (!strcmp(state, "lost"))
		snprintf(evalue, sizeof(evalue), "%s; the state is lost (%s)", what, reason);
	else
		snprintf(evalue, sizeof(evalue), "%s", what);
	add_line(tb, "%s: %s", ename, evalue);
	cJSON_AddStringToObject(err, "ename", ename);
	cJSON_AddStringToObject(err, "evalue", evalue);
	cJSON_AddItemToObject(err, "traceback", tb);
}

/* The error of a verdict whose status is not ok, or NULL. */
static cJSON *verdict_error(const cJSON *v)
{
	const char *status = str(v, "status");
	cJSON *err;

	if (!strcmp(status, "ok"))
		return NULL;
	err = cJSON_CreateObject();
	/* A denial the Python layer raised (an import, an audited call) is an exception the cell
	 * could have caught: shown as Python shows it, when the cell was not killed for it. */
	if (!strcmp(status, "exception") ||
	    (!strcmp(status, "denied") && cJSON_IsObject(cJSON_GetObjectItem(v, "exception")) &&
	     strcmp(str(v, "state"), "rolled_back") && strcmp(str(v, "state"), "lost"))) {
		exception_error(v, err);
		return err;
	}
	for (size_t i = 0; i < sizeof(deaths) / sizeof(deaths[0]); i++)
		if (!strcmp(deaths[i].status, status)) {
			death_error(v, &deaths[i], err);
			return err;
		}
	death_error(v, &(struct death){ status, "CellFailed", status }, err);
	return err;
}

static void reply(struct cell *x, cJSON *err, cJSON *user_expressions, cJSON *payload)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", err ? "error" : "ok");
	cJSON_AddNumberToObject(c, "execution_count", x->ch->k->execution_count);
	if (err) {
		cJSON_AddItemToObject(c, "ename",
				      cJSON_Duplicate(cJSON_GetObjectItem(err, "ename"), 1));
		cJSON_AddItemToObject(c, "evalue",
				      cJSON_Duplicate(cJSON_GetObjectItem(err, "evalue"), 1));
		cJSON_AddItemToObject(c, "traceback",
				      cJSON_Duplicate(cJSON_GetObjectItem(err, "traceback"), 1));
	}
	cJSON_AddItemToObject(c, "user_expressions",
			      user_expressions ? user_expressions : cJSON_CreateObject());
	cJSON_AddItemToObject(c, "payload", payload ? payload : cJSON_CreateArray());
	ps_kchan_reply(x->ch, x->m, "execute_reply", c);
}

static cJSON *plain_error(const char *ename, const char *evalue)
{
	cJSON *err = cJSON_CreateObject(), *tb = cJSON_CreateArray();

	add_line(tb, "%s: %s", ename, evalue);
	cJSON_AddStringToObject(err, "ename", ename);
	cJSON_AddStringToObject(err, "evalue", evalue);
	cJSON_AddItemToObject(err, "traceback", tb);
	return err;
}

/* An error of the kernel's own (no verdict): published as the cell's error output. */
static cJSON *fail(struct cell *x, const char *ename, const char *evalue)
{
	cJSON *err = plain_error(ename, evalue);

	if (!x->silent)
		publish_json(x, "error", cJSON_Duplicate(err, 1));
	return err;
}

/* display bundles the callback did not publish, the result, the error: in that order. */
static cJSON *publish_verdict(struct cell *x, const cJSON *v)
{
	const cJSON *disp = cJSON_GetObjectItemCaseSensitive(v, "display");
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(v, "result");
	cJSON *err = verdict_error(v), *c;
	int n = cJSON_GetArraySize(disp);

	for (int i = (int)x->ndisplay; i < n; i++)
		publish_display(x, cJSON_GetArrayItem(disp, i));
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(res, "data"), "text/plain")))
		x->result_text = strdup(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(res, "data"), "text/plain")->valuestring);
	c = cJSON_IsObject(res) && !x->silent ? bundle_content(res) : NULL;
	if (c) {
		cJSON_AddNumberToObject(c, "execution_count", x->ch->k->execution_count);
		publish_json(x, "execute_result", c);
	}
	if (err && !x->silent)
		publish_json(x, "error", cJSON_Duplicate(err, 1));
	return err;
}

/* Per-cell limits a client may ask for in the request's metadata:
 * {"pysnip": {"limits": {"wall": "2s"}}}; they only tighten the kernel's. */
static char *request_limits(const struct ps_kmsg *m)
{
	char *meta = strndup((const char *)m->metadata.p, m->metadata.n), *text = NULL;
	cJSON *j = meta ? cJSON_Parse(meta) : NULL;
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "pysnip"), "limits");

	if (cJSON_IsObject(lim))
		text = cJSON_PrintUnformatted(lim);
	cJSON_Delete(j);
	free(meta);
	return text;
}

/* The engine's own account of the cell, in the trace: its wall time, of it the fork (setup)
 * and the run. */
static void trace_usage(const cJSON *v)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(v, "usage");
	const char *names[] = { "wall_ms", "setup_ms", "run_ms" };
	char detail[96];
	int n = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(u, names[i]);

		n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%s%s=%.3f", i ? " " : "",
			      names[i], cJSON_IsNumber(f) ? f->valuedouble : -1.0);
	}
	ps_ktrace("usage", detail);
}

/* The session ended with this cell: the error says so, and a fresh session takes the next. */
static cJSON *renew(struct cell *x, const char *why)
{
	char err[256], msg[600];
	bool ok = ps_kernel_session_renew(x->ch->k, err, sizeof(err)) != NULL;

	ps_klog("%s; %s%s", why, ok ? "a new session is started" : "no new session: ",
		ok ? "" : err);
	snprintf(msg, sizeof(msg), "%s; %s%s", why,
		 ok ? "the state is lost: the next cell runs in a new session" :
		      "and no new session could start: ", ok ? "" : err);
	return fail(x, "SessionEnded", msg);
}

static bool flag(const cJSON *body, const char *name, bool dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static cJSON *run(struct cell *x, const char *code)
{
	struct ps_kernel *k = x->ch->k;
	const struct ps_session_cb cb = { .ctx = x, .stream = on_stream, .display = on_display,
					  .input = on_input };
	const char *why;
	struct ps_session *s = ps_kernel_session(k, &why);
	char err[256], *limits, *verdict;
	cJSON *v, *e;

	if (!s)
		return fail(x, "SessionError", why);
	if (atomic_load(&k->stopping))	/* shut down before it began: it never runs */
		return fail(x, "KernelShutdown", "the kernel is shutting down");
	limits = request_limits(x->m);
	ps_ktrace("engine", "exec");
	verdict = ps_session_exec(s, code, strlen(code), limits, &cb, err, sizeof(err));
	ps_ktrace("engine", "verdict");
	free(limits);
	flush_streams(x);
	if (!verdict && ps_session_ended(s))
		return renew(x, err);
	if (!verdict)
		return fail(x, !strncmp(err, "limits", 6) ? "LimitsError" : "SessionError", err);
	v = cJSON_Parse(verdict);
	free(verdict);
	if (!v)
		return fail(x, "InternalError", "the session's verdict is not JSON");
	trace_usage(v);
	e = publish_verdict(x, v);
	cJSON_Delete(v);
	return e;
}

/* `name?`: its inspection as a page payload; a name the state lacks is said on stdout, as
 * IPython does, and the cell is ok. */
static cJSON *page(struct cell *x, const char *name, cJSON **payload)
{
	char err[300];

	*payload = ps_kpage(x->ch->k, name, err, sizeof(err));
	if (*payload)
		return NULL;
	if (!strncmp(err, "Object `", 8)) {
		strncat(err, "\n", sizeof(err) - strlen(err) - 1);
		publish_stream(x, "stdout", err);
		return NULL;
	}
	return fail(x, "InspectError", err);
}

/* After a cell that ended ok: its request's user_expressions, in its state (user_expr.c). */
static cJSON *user_expressions(struct cell *x, const cJSON *ue)
{
	char *limits;
	cJSON *out;

	if (!cJSON_IsObject(ue) || !ue->child)
		return NULL;
	limits = request_limits(x->m);
	out = ps_kuser_expressions(x->ch->k, ue, limits);
	free(limits);
	return out;
}

/* What is wrong with an execute_request's content, before anything runs, or NULL. */
static const char *bad_request(const cJSON *body)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");
	const cJSON *ue = cJSON_GetObjectItemCaseSensitive(body, "user_expressions");

	if (!cJSON_IsString(code))
		return "execute_request without a code string";
	if (ue && !cJSON_IsNull(ue) && !cJSON_IsObject(ue))
		return "execute_request: user_expressions must be an object of name: expression "
		       "(the cell was not run)";
	return NULL;
}

void ps_kh_execute(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(m->body, "code");
	struct cell x = { .ch = ch, .m = m };
	struct ps_kernel *k = ch->k;
	cJSON *c, *err, *ue = NULL, *payload = NULL;
	const char *bad = bad_request(m->body);
	char name[256];
	bool stored;

	x.silent = flag(m->body, "silent", false);
	x.allow_stdin = flag(m->body, "allow_stdin", true);
	if (bad) {
		err = fail(&x, "ProtocolError", bad);
		goto done;
	}
	stored = !x.silent && flag(m->body, "store_history", true);
	if (stored)
		k->execution_count++;
	/* Busy from here, before execute_input tells the client the cell runs: an interrupt or a
	 * shutdown that follows execute_input finds it (kernel.c repeats both while busy). */
	atomic_store(&k->interrupted, false);
	atomic_fetch_add(&k->cell_seq, 1);
	atomic_store(&k->busy, true);
	if (!x.silent) {
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "code", code->valuestring);
		cJSON_AddNumberToObject(c, "execution_count", k->execution_count);
		publish_json(&x, "execute_input", c);
	}
	if (ps_kpage_name(code->valuestring, name, sizeof(name)))
		err = page(&x, name, &payload);
	else
		err = run(&x, code->valuestring);
	if (!err)	/* as ipykernel: evaluated only after a cell that ended ok */
		ue = user_expressions(&x, cJSON_GetObjectItemCaseSensitive(m->body,
									  "user_expressions"));
	atomic_store(&k->busy, false);
	if (stored)
		ps_khistory_add(&k->history, k->execution_count, code->valuestring, x.result_text);
done:
	/* the cells queued behind this one are aborted: those waiting now, before the reply */
	if (err && !k->aborting && flag(m->body, "stop_on_error", true))
		ps_kernel_take_queued(ch);
	reply(&x, err, ue, payload);
	cJSON_Delete(err);
	free(x.result_text);
	ps_krecv_free(x.stdin_store);
}
