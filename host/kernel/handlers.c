/* What each request does: a table from msg_type to its handler and the channels it is served
 * on. Every request is bracketed by status busy/idle on iopub with the request as parent, the
 * reply sent before idle, as ipykernel does. Requests that run Python are in engine.c. */
#include <stdio.h>
#include <string.h>

#include "kernel_int.h"

#ifndef PS_VERSION
#define PS_VERSION "0.1.0"
#endif
#ifndef PS_PY_VERSION
#define PS_PY_VERSION "3.11"
#endif

enum { ON_SHELL = 1, ON_CONTROL = 2 };

static cJSON *ok_content(void)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "ok");
	return c;
}

static cJSON *language_info(void)
{
	cJSON *li = cJSON_CreateObject(), *cm = cJSON_CreateObject();

	/* Plain Python: cells are not IPython (no magics), so the lexer and editor mode are
	 * Python 3's own. */
	cJSON_AddStringToObject(li, "name", "python");
	cJSON_AddStringToObject(li, "version", PS_PY_VERSION);
	cJSON_AddStringToObject(li, "mimetype", "text/x-python");
	cJSON_AddStringToObject(li, "file_extension", ".py");
	cJSON_AddStringToObject(li, "pygments_lexer", "python3");
	cJSON_AddStringToObject(cm, "name", "python");
	cJSON_AddNumberToObject(cm, "version", 3);
	cJSON_AddItemToObject(li, "codemirror_mode", cm);
	cJSON_AddStringToObject(li, "nbconvert_exporter", "python");
	return li;
}

static void kernel_info(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = ok_content();
	char banner[256];

	snprintf(banner, sizeof(banner),
		 "pysnip %s: Python %s, every cell sandboxed (policy '%s'); a cell that dies is "
		 "rolled back", PS_VERSION, PS_PY_VERSION,
		 ch->k->opts->policy ? ch->k->opts->policy : "notebook");
	cJSON_AddStringToObject(c, "protocol_version", "5.3");
	cJSON_AddStringToObject(c, "implementation", "pysnip");
	cJSON_AddStringToObject(c, "implementation_version", PS_VERSION);
	cJSON_AddItemToObject(c, "language_info", language_info());
	cJSON_AddStringToObject(c, "banner", banner);
	cJSON_AddItemToObject(c, "help_links", cJSON_CreateArray());
	cJSON_AddBoolToObject(c, "debugger", 0);
	ps_kchan_reply(ch, m, "kernel_info_reply", c);
}

/* The cells this kernel ran, as the front kept them (history.c). */
static void history(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	ps_kchan_reply(ch, m, "history_reply", ps_khistory_reply(ch->k->history, m->body));
}

/* No comm targets exist: no comm is ever open. */
static void comm_info(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = ok_content();

	cJSON_AddItemToObject(c, "comms", cJSON_CreateObject());
	ps_kchan_reply(ch, m, "comm_info_reply", c);
}

/* A comm_open for a target nobody registered is closed at once (ipykernel does the same), so
 * the front end does not wait on it; comm_msg and comm_close to no comm are ignored. */
static void comm_open(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->body, "comm_id");
	cJSON *c = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(c, "comm_id", cJSON_IsString(id) ? id->valuestring : "");
	cJSON_AddItemToObject(c, "data", cJSON_CreateObject());
	text = cJSON_PrintUnformatted(c);
	if (text)
		ps_kchan_publish(ch, &m->header, "comm_close", text);
	cJSON_free(text);
	cJSON_Delete(c);
}

static void ignore(struct ps_kchan *ch, const struct ps_kmsg *m)
{
}

static void shutdown(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(m->body, "restart");
	cJSON *c = ok_content();
	char *text;

	/* A restart is the client's: it waits for this process to end and starts a new one. */
	cJSON_AddBoolToObject(c, "restart", cJSON_IsTrue(r));
	text = cJSON_PrintUnformatted(c);
	if (text)	/* ipykernel tells every client, on iopub, too */
		ps_kchan_publish(ch, &m->header, "shutdown_reply", text);
	cJSON_free(text);
	ps_kchan_reply(ch, m, "shutdown_reply", c);
	ps_kernel_interrupt(ch->k);	/* a running cell ends (killed after the grace period) */
	ps_kernel_stop(ch->k);
}

static void interrupt(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	if (ch == &ch->k->control)	/* the repeats are the control thread's */
		ps_kernel_interrupt_cell(ch->k);
	else
		ps_kernel_interrupt(ch->k);
	ps_kchan_reply(ch, m, "interrupt_reply", ok_content());
}

/* A cell queued behind one that failed with stop_on_error (ipykernel's abort). */
static void aborted(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "aborted");
	cJSON_AddNumberToObject(c, "execution_count", ch->k->execution_count);
	ps_kchan_reply(ch, m, "execute_reply", c);
}

static const struct handler {
	const char *type;
	ps_khandler *run;
	int where;
} handlers[] = {
	{ "kernel_info_request", kernel_info, ON_SHELL | ON_CONTROL },
	{ "execute_request", ps_kh_execute, ON_SHELL },
	{ "is_complete_request", ps_kh_is_complete, ON_SHELL },
	{ "complete_request", ps_kh_complete, ON_SHELL },
	{ "inspect_request", ps_kh_inspect, ON_SHELL },
	{ "history_request", history, ON_SHELL },
	{ "comm_info_request", comm_info, ON_SHELL | ON_CONTROL },
	{ "comm_open", comm_open, ON_SHELL },
	{ "comm_msg", ignore, ON_SHELL },
	{ "comm_close", ignore, ON_SHELL },
	{ "shutdown_request", shutdown, ON_SHELL | ON_CONTROL },
	{ "interrupt_request", interrupt, ON_SHELL | ON_CONTROL },
};

void ps_kernel_dispatch(struct ps_kchan *ch, struct ps_kmsg *m)
{
	int where = ch == &ch->k->shell ? ON_SHELL : ON_CONTROL;
	const struct handler *h = NULL;

	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (!strcmp(handlers[i].type, m->msg_type))
			h = &handlers[i];
	ps_kchan_status(ch, &m->header, "busy");
	if (!h)
		ps_klog("%s: unknown msg_type '%.64s': no reply", ch->name, m->msg_type);
	else if (!(h->where & where))
		ps_klog("%s: %s is not served on this channel: no reply", ch->name, h->type);
	else if (where == ON_SHELL && ch->k->aborting && h->run == ps_kh_execute)
		aborted(ch, m);
	else
		h->run(ch, m);
	ps_kchan_status(ch, &m->header, "idle");
}
