/* The cells' side of the kernel: execute, complete, inspect, is_complete and interrupt go to
 * the session engine (host/session/). Until that engine is in this tree, these answer as the
 * protocol allows a kernel that cannot run code: execute fails saying so, is_complete is
 * "unknown", complete and inspect find nothing. */
#include "kernel_int.h"

int ps_kernel_engine_start(struct ps_kernel *k)
{
	return 0;
}

void ps_kernel_engine_stop(struct ps_kernel *k)
{
}

void ps_kernel_interrupt(struct ps_kernel *k)
{
}

void ps_kh_execute(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "error");
	cJSON_AddNumberToObject(c, "execution_count", ++ch->k->execution_count);
	cJSON_AddStringToObject(c, "ename", "NotImplementedError");
	cJSON_AddStringToObject(c, "evalue", "pysnip kernel: no session engine in this build");
	cJSON_AddItemToObject(c, "traceback", cJSON_CreateArray());
	ps_kchan_reply(ch, m, "execute_reply", c);
}

void ps_kh_is_complete(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "unknown");
	ps_kchan_reply(ch, m, "is_complete_reply", c);
}

void ps_kh_complete(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddItemToObject(c, "matches", cJSON_CreateArray());
	cJSON_AddNumberToObject(c, "cursor_start", 0);
	cJSON_AddNumberToObject(c, "cursor_end", 0);
	cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	ps_kchan_reply(ch, m, "complete_reply", c);
}

void ps_kh_inspect(struct ps_kchan *ch, const struct ps_kmsg *m)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddBoolToObject(c, "found", 0);
	cJSON_AddItemToObject(c, "data", cJSON_CreateObject());
	cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	ps_kchan_reply(ch, m, "inspect_reply", c);
}
