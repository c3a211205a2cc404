/* The kernel front's own text handling: the help syntax a cell is paged for (pager.c) and the
 * history it keeps and answers from (history.c), its bounds and its argument checks. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernel/kernel_int.h"

static void test_page_names(void)
{
	const char *yes[][2] = { { "zip?", "zip" }, { "os.path.join??", "os.path.join" },
				 { "?x", "x" }, { " \n a_1.b2 ?\n", "a_1.b2" } };
	const char *no[] = { "zip", "zip???", "?zip?", "1a?", "a..b?", "a.?", ".a?", "a b?",
			     "f(x)?", "?", "", "x = 1?", "caf\xc3\xa9?" };
	char name[64];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		CHECK(ps_kpage_name(yes[i][0], name, sizeof(name)));
		CHECK_STR(name, yes[i][1]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		CHECK(!ps_kpage_name(no[i], name, sizeof(name)));
	CHECK(!ps_kpage_name("abcdefghij?", name, 8));	/* does not fit: not paged */
}

static cJSON *ask(const struct ps_khistory *h, const char *body_json)
{
	cJSON *body = cJSON_Parse(body_json), *r = ps_khistory_reply(h, body);

	cJSON_Delete(body);
	return r;
}

static int count(const cJSON *r)
{
	return cJSON_GetArraySize(cJSON_GetObjectItem(r, "history"));
}

static const char *status(const cJSON *r)
{
	return cJSON_GetObjectItem(r, "status")->valuestring;
}

static void test_history_bounds_and_search(void)
{
	struct ps_khistory *h = NULL;
	char code[32], *text;
	cJSON *r;

	r = ask(NULL, "{\"hist_access_type\": \"tail\", \"n\": 5}");	/* nothing run yet */
	CHECK_STR(status(r), "ok");
	CHECK(count(r) == 0);
	cJSON_Delete(r);
	for (int i = 1; i <= 10005; i++) {
		snprintf(code, sizeof(code), "x = %d", i % 3);
		ps_khistory_add(&h, i, code, i % 2 ? "out" : NULL);
	}
	r = ask(h, "{\"hist_access_type\": \"range\", \"session\": 0, \"start\": 0}");
	CHECK(count(r) == 10000);	/* the oldest five went */
	CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "history"), 0), 1)
		      ->valueint == 6);
	cJSON_Delete(r);
	r = ask(h, "{\"hist_access_type\": \"search\", \"pattern\": \"x = [12]\", \"unique\": true}");
	CHECK(count(r) == 2);	/* the latest of each of the two inputs */
	cJSON_Delete(r);
	r = ask(h, "{\"hist_access_type\": \"search\", \"pattern\": \"*\", \"n\": 3, "
		   "\"output\": true}");
	CHECK(count(r) == 3);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "history"));
	CHECK_STR(text, "[[1,10003,[\"x = 1\",\"out\"]],[1,10004,[\"x = 2\",null]],"
			"[1,10005,[\"x = 0\",\"out\"]]]");
	free(text);
	cJSON_Delete(r);
	r = ask(h, "{\"hist_access_type\": \"range\", \"session\": 7, \"start\": 0}");
	CHECK(count(r) == 0);	/* no other session is kept */
	cJSON_Delete(r);
	r = ask(h, "{\"hist_access_type\": \"tail\", \"n\": 1e300}");
	CHECK_STR(status(r), "error");
	CHECK_CONTAINS(cJSON_GetObjectItem(r, "evalue")->valuestring, "n must be a whole number");
	cJSON_Delete(r);
	ps_khistory_free(h);
}

static void test_history_byte_bound(void)
{
	struct ps_khistory *h = NULL;
	size_t big = 9u << 20;
	char *code = malloc(big + 1);
	cJSON *r;

	memset(code, 'a', big);
	code[big] = '\0';
	ps_khistory_add(&h, 1, code, NULL);
	ps_khistory_add(&h, 2, code, NULL);	/* 18 MiB: the first goes */
	ps_khistory_add(&h, 3, "small", NULL);
	r = ask(h, "{\"hist_access_type\": \"tail\", \"n\": 10}");
	CHECK(count(r) == 2);
	CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "history"), 0), 1)
		      ->valueint == 2);
	cJSON_Delete(r);
	ps_khistory_free(h);
	free(code);
}

int main(void)
{
	test_page_names();
	test_history_bounds_and_search();
	test_history_byte_bound();
	return ps_test_done("test_kernel_front");
}
