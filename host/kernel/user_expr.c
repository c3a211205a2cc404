/* An execute_request's user_expressions: after a cell that ended ok, each expression is
 * evaluated in the cell's state, as ipykernel does, and answered in the execute_reply as a MIME
 * bundle ({"status": "ok", "data", "metadata"}) or an error ({"status": "error", "ename",
 * "evalue", "traceback"}). The front never evaluates them: they run as one more cell in the
 * session engine, sandboxed like any (the expressions reach it as a JSON list, which is a
 * Python list literal; each goes through eval() in the state, its value through display(),
 * whose bundles come back by the display callback in order). Nothing of that cell is
 * published: it is the reply's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_int.h"
#include "session/session.h"

#define PS_KUE_ERROR_MIME "application/x.pysnip.user-expression-error"

/* The evaluator: one display() per expression, in order, an error as a bundle of its own
 * MIME type; the function is gone again afterwards. The list goes between head and tail. */
static const char head[] =
	"def __pysnip_user_expressions(exprs):\n"
	"    show = __import__('builtins').display\n"
	"    for e in exprs:\n"
	"        try:\n"
	"            v = eval(e, globals())\n"
	"        except BaseException as x:\n"
	"            try:\n"
	"                msg = str(x)\n"
	"            except BaseException:\n"
	"                msg = '<unprintable>'\n"
	"            show({'" PS_KUE_ERROR_MIME "': {'ename': type(x).__name__, 'evalue': msg}},"
	" raw=True)\n"
	"        else:\n"
	"            show(v)\n"
	"try:\n"
	"    __pysnip_user_expressions(";
static const char tail[] = ")\n"
	"finally:\n"
	"    del __pysnip_user_expressions\n";

static char *evaluator(const char *list)
{
	size_t hn = strlen(head), ln = strlen(list), tn = strlen(tail);
	char *code = malloc(hn + ln + tn + 1);

	if (code) {
		memcpy(code, head, hn);
		memcpy(code + hn, list, ln);
		memcpy(code + hn + ln, tail, tn + 1);
	}
	return code;
}

static cJSON *error_dict(const char *ename, const char *evalue)
{
	cJSON *e = cJSON_CreateObject(), *tb = cJSON_CreateArray();
	char line[600];

	snprintf(line, sizeof(line), "%.100s: %.480s", ename, evalue);
	cJSON_AddItemToArray(tb, cJSON_CreateString(line));
	cJSON_AddStringToObject(e, "status", "error");
	cJSON_AddStringToObject(e, "ename", ename);
	cJSON_AddStringToObject(e, "evalue", evalue);
	cJSON_AddItemToObject(e, "traceback", tb);
	return e;
}

static void on_bundle(void *ctx, const char *bundle_json)
{
	cJSON *b = cJSON_Parse(bundle_json);

	if (cJSON_IsObject(b) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(b, "data")))
		cJSON_AddItemToArray(ctx, b);
	else
		cJSON_Delete(b);	/* a clear_output frame: not an expression's value */
}

/* The answer for one expression from its bundle (or why there is none). */
static cJSON *answer(const cJSON *b, const char *why)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(b, "data");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(b, "metadata");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(data, PS_KUE_ERROR_MIME);
	cJSON *a;

	if (!b)
		return error_dict("UserExpressionError", why);
	if (err) {
		const cJSON *en = cJSON_GetObjectItemCaseSensitive(err, "ename");
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(err, "evalue");

		return error_dict(cJSON_IsString(en) ? en->valuestring : "Exception",
				  cJSON_IsString(ev) ? ev->valuestring : "");
	}
	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "status", "ok");
	cJSON_AddItemToObject(a, "data", cJSON_Duplicate(data, 1));
	cJSON_AddItemToObject(a, "metadata", cJSON_IsObject(meta) ? cJSON_Duplicate(meta, 1)
								  : cJSON_CreateObject());
	return a;
}

/* Why the evaluating cell gave fewer bundles than expressions: its verdict's status. */
static void cell_failure(const char *verdict, char *why, size_t len)
{
	cJSON *v = cJSON_Parse(verdict);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");

	snprintf(why, len, "the cell evaluating the expressions ended: %s",
		 cJSON_IsString(st) ? st->valuestring : "without a verdict");
	cJSON_Delete(v);
}

cJSON *ps_kuser_expressions(struct ps_kernel *k, const cJSON *exprs, const char *limits)
{
	cJSON *out = cJSON_CreateObject(), *list = cJSON_CreateArray(), *got = cJSON_CreateArray();
	const struct ps_session_cb cb = { .ctx = got, .display = on_bundle };
	const cJSON *e;
	struct ps_session *s;
	char err[256] = "", why[300] = "", *code = NULL, *text, *verdict = NULL;
	int i = 0;

	cJSON_ArrayForEach(e, exprs)
		if (cJSON_IsString(e))
			cJSON_AddItemToArray(list, cJSON_CreateString(e->valuestring));
	text = cJSON_GetArraySize(list) ? cJSON_PrintUnformatted(list) : NULL;
	s = text ? ps_kernel_session(k, &(const char *){ NULL }) : NULL;
	if (text && s && (code = evaluator(text)))
		verdict = ps_session_exec(s, code, strlen(code), limits, &cb, err, sizeof(err));
	if (verdict)
		cell_failure(verdict, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "the expressions were not evaluated: %s",
			 *err ? err : "no session");
	cJSON_ArrayForEach(e, exprs) {
		char msg[200];

		if (!cJSON_IsString(e)) {
			snprintf(msg, sizeof(msg), "user_expressions['%.100s'] is not a string",
				 e->string);
			cJSON_AddItemToObject(out, e->string, error_dict("TypeError", msg));
			continue;
		}
		cJSON_AddItemToObject(out, e->string, answer(cJSON_GetArrayItem(got, i++), why));
	}
	free(verdict);
	free(code);
	cJSON_free(text);
	cJSON_Delete(list);
	cJSON_Delete(got);
	return out;
}
