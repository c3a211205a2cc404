/* history_request's arguments (host/kernel/history.c) over a history of a few cells. Whatever
 * the content object: the reply is {"status": "ok", "history": [...]} or an error whose evalue
 * names the argument ("history_request: ...") with an empty history; every entry is
 * [1, line, input] or, with output true, [1, line, [input, output-or-null]], lines increasing,
 * inputs among those kept; tail gives at most n. Input: byte 0 is how many cells are kept
 * (mod 40), the rest the request's content (JSON). */
#include "fuzz.h"
#include "kernel/kernel_int.h"

static const char *const inputs[] = { "x = 1", "x + 1", "print('h\xc3\xa9llo')", "", "6*7",
				      "x = 1" };

static bool known(const char *s)
{
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
		if (!strcmp(s, inputs[i]))
			return true;
	return false;
}

static void check_entry(const cJSON *e, bool output, double *last)
{
	const cJSON *line = cJSON_GetArrayItem(e, 1), *in = cJSON_GetArrayItem(e, 2);

	FUZZ_CHECK(cJSON_IsArray(e) && cJSON_GetArraySize(e) == 3, "an entry is not [s, l, in]");
	FUZZ_CHECK(cJSON_GetArrayItem(e, 0)->valuedouble == 1, "session is not 1");
	FUZZ_CHECK(cJSON_IsNumber(line) && line->valuedouble > *last, "lines not increasing");
	*last = line->valuedouble;
	if (output) {
		const cJSON *o = cJSON_GetArrayItem(in, 1);

		FUZZ_CHECK(cJSON_IsArray(in) && cJSON_GetArraySize(in) == 2, "no [input, output]");
		FUZZ_CHECK(cJSON_IsNull(o) || cJSON_IsString(o), "output neither text nor null");
		in = cJSON_GetArrayItem(in, 0);
	}
	FUZZ_CHECK(cJSON_IsString(in) && known(in->valuestring), "an input never kept");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_khistory *h = NULL;
	char *text = size ? fuzz_cstr(data + 1, size - 1) : NULL;
	cJSON *body = text ? cJSON_Parse(text) : NULL, *r;
	const cJSON *hist, *e, *n, *out;
	int kept = size ? data[0] % 40 : 0;
	double last = 0;

	free(text);
	if (!cJSON_IsObject(body)) {	/* the wire parser refuses content that is not */
		cJSON_Delete(body);
		return 0;
	}
	for (int i = 0; i < kept; i++)
		ps_khistory_add(&h, i + 1, inputs[i % 6], i % 3 ? "out" : NULL);
	r = ps_khistory_reply(h, body);
	hist = cJSON_GetObjectItemCaseSensitive(r, "history");
	FUZZ_CHECK(cJSON_IsArray(hist), "no history array");
	if (!strcmp(cJSON_GetObjectItemCaseSensitive(r, "status")->valuestring, "error")) {
		FUZZ_CHECK(!strncmp(cJSON_GetObjectItemCaseSensitive(r, "evalue")->valuestring,
				    "history_request: ", 17), "an error not naming the request");
		FUZZ_CHECK(cJSON_GetArraySize(hist) == 0, "an error with entries");
	} else {
		FUZZ_CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(r, "status")->valuestring,
				   "ok"), "status neither ok nor error");
		FUZZ_CHECK(cJSON_GetArraySize(hist) <= kept, "more entries than kept");
		out = cJSON_GetObjectItemCaseSensitive(body, "output");
		cJSON_ArrayForEach(e, hist)
			check_entry(e, cJSON_IsTrue(out), &last);
		n = cJSON_GetObjectItemCaseSensitive(body, "n");
		if (cJSON_IsNumber(n) && !strcmp(cJSON_GetObjectItemCaseSensitive(
				body, "hist_access_type")->valuestring, "tail"))
			FUZZ_CHECK(cJSON_GetArraySize(hist) <= n->valuedouble, "tail past n");
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	ps_khistory_free(h);
	return 0;
}
