/* `pysnip exec --server URL`: one HTTP POST /v1/exec through libcurl, over TCP or a Unix
 * socket. Lives in pysnip-serve with the other HTTP code; `pysnip exec --server` execs it, so
 * that a one-shot run never loads libcurl. */
#include "http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "run/outfiles.h"
#include "run/result.h"
#include "util/codec.h"
#include "util/util.h"

enum { ANSWER_MAX = 512 << 20 };

/* Append ,"key":<quoted bytes> to the body. */
static void add_string(FILE *f, const char *key, const char *buf, size_t len)
{
	char *q = ps_json_quote_bytes(buf, len);

	fprintf(f, ",\"%s\":%s", key, q ? q : "\"\"");
	free(q);
}

/* ,"files":[{"path":"input/NAME","content":BASE64}...] from --input [NAME=]PATH; the server
 * checks the names. -1 with the message printed when a file cannot be read. */
static int add_files(FILE *f, const struct ps_opts *o)
{
	for (int i = 0; i < o->n_inputs; i++) {
		const char *arg = o->inputs[i], *eq = strchr(arg, '=');
		const char *path = eq ? eq + 1 : arg, *base = strrchr(path, '/');
		char name[256], *data = NULL, *b64, *q;
		size_t len = 0;
		int rc;

		snprintf(name, sizeof(name), "input/%.*s", eq ? (int)(eq - arg) : 240,
			 eq ? arg : (base ? base + 1 : path));
		rc = ps_read_file(path, &data, &len);
		if (rc < 0) {
			ps_err("--input %s: %s", arg, strerror(-rc));
			return -1;
		}
		b64 = malloc(ps_base64_encoded_len(len) + 1);
		if (!b64) {
			free(data);
			ps_err("--input %s: out of memory", arg);
			return -1;
		}
		ps_base64_encode(data, len, b64);
		q = ps_json_quote_bytes(name, strlen(name));
		fprintf(f, "%s{\"path\":%s,\"content\":\"%s\"}", i ? "," : ",\"files\":[",
			q ? q : "\"\"", b64);
		free(q);
		free(b64);
		free(data);
	}
	if (o->n_inputs)
		fputc(']', f);
	return 0;
}

static char *build_body(const struct ps_opts *o, const char *code, size_t code_len,
			const char *in, size_t in_len, size_t *len)
{
	char *body = NULL;
	FILE *f = open_memstream(&body, len);
	bool any = false;

	if (!f)
		return NULL;
	{
		char *q = ps_json_quote_bytes(o->policy, strlen(o->policy));

		fprintf(f, "{\"policy\":%s", q ? q : "\"default\"");
		free(q);
	}
	add_string(f, "code", code, code_len);
	if (in)
		add_string(f, "stdin", in, in_len);
	if (add_files(f, o) < 0) {
		fclose(f);
		free(body);
		return NULL;
	}
	for (int i = 0; i < PS_OV_COUNT; i++) {
		char *q;

		if (!o->override[i])
			continue;
		q = ps_json_quote_bytes(o->override[i], strlen(o->override[i]));
		fprintf(f, "%s\"%s\":%s", any ? "," : ",\"limits\":{",
			ps_override_field((enum ps_override)i), q ? q : "\"\"");
		free(q);
		any = true;
	}
	fputs(any ? "}}" : "}", f);
	if (fclose(f)) {
		free(body);
		return NULL;
	}
	return body;
}

/* --output-dir: the answer's files (their content) written there, checked as a one-shot run's
 * are (the server's word is not trusted more than a worker's), and the content taken out of
 * the verdict, which then reads as `pysnip exec` prints it. */
static int take_files(const char *dir, char **body, size_t *blen)
{
	cJSON *v = cJSON_ParseWithLength(*body, *blen), *f;
	struct ps_outfiles o = { 0 };
	char err[512];
	int rc = -1;

	if (!v)
		return 0;	/* not a verdict: printed as it came */
	o.files = calloc((size_t)cJSON_GetArraySize(cJSON_GetObjectItem(v, "files")) + 1,
			 sizeof(*o.files));
	if (!o.files)
		goto out;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(v, "files")) {
		cJSON *p = cJSON_GetObjectItem(f, "path"), *c = cJSON_GetObjectItem(f, "content");
		struct ps_outfile *of = &o.files[o.n];
		long n;

		if (!cJSON_IsString(p) || !cJSON_IsString(c) || ps_outfile_name_problem(p->valuestring))
			continue;
		of->data = malloc(strlen(c->valuestring) / 4 * 3 + 1);
		of->path = strdup(p->valuestring);
		n = of->data ? ps_base64_decode(c->valuestring, strlen(c->valuestring), of->data) : -1;
		cJSON_DeleteItemFromObject(f, "content");
		if (n < 0 || !of->path) {
			free(of->data);
			free(of->path);
			continue;
		}
		of->len = (size_t)n;
		o.n++;
	}
	if (dir && ps_outfiles_write(&o, dir, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		goto out;
	}
	free(*body);
	*body = cJSON_PrintUnformatted(v);
	*blen = *body ? strlen(*body) : 0;
	rc = *body ? 0 : -1;
out:
	ps_outfiles_free(&o);
	cJSON_Delete(v);
	return rc;
}

/* Status code and body of the answer; the body is printed (verdict) or reported (error). */
static int handle_answer(const char *url, long code, char **bodyp, size_t blen,
			 const char *output_dir)
{
	char *body = *bodyp;

	while (blen && (body[blen - 1] == '\n' || body[blen - 1] == '\r'))
		body[--blen] = '\0';
	if (code == 200) {
		if (take_files(output_dir, bodyp, &blen) < 0)
			return PS_EXIT_INTERNAL;
		body = *bodyp;
	}
	if (code == 200 || (code == 500 && strstr(body, "\"status\":\"internal_error\""))) {
		if (ps_write_all(1, body, blen) < 0 || ps_write_all(1, "\n", 1) < 0) {
			ps_err("writing the verdict to stdout: %s", strerror(errno));
			return PS_EXIT_INTERNAL;
		}
		return code == 200 ? PS_EXIT_OK : PS_EXIT_INTERNAL;
	}
	ps_err("--server %s: HTTP %ld: %s", url, code, body);
	return code >= 400 && code < 500 && code != 429 ? PS_EXIT_USAGE : PS_EXIT_INTERNAL;
}

struct answer {
	char *buf;
	size_t len;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t add = size * n;
	char *nb;

	if (a->len + add > ANSWER_MAX || !(nb = realloc(a->buf, a->len + add + 1)))
		return 0;	/* makes curl fail the transfer */
	memcpy(nb + a->len, data, add);
	a->buf = nb;
	a->len += add;
	a->buf[a->len] = '\0';
	return add;
}

/* POST body to URL (http://HOST:PORT or unix:/path). 0 with the status code, or -1 after a
 * message naming the URL and curl's reason. */
static int post(const char *url, const char *body, size_t len, long *code, struct answer *a)
{
	const char *token = getenv("PYSNIP_TOKEN");
	char target[1024], auth[1024];
	struct curl_slist *h = NULL, *h2;
	CURL *c = curl_easy_init();
	CURLcode rc = CURLE_FAILED_INIT;

	if (!c) {
		ps_err("--server %s: curl_easy_init failed", url);
		return -1;
	}
	if (!strncmp(url, "unix:", 5)) {
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, url + 5);
		snprintf(target, sizeof(target), "http://localhost/v1/exec");
	} else {
		snprintf(target, sizeof(target), "%s/v1/exec", url);
	}
	h2 = curl_slist_append(h, "Content-Type: application/json");
	h = h2 ? h2 : h;
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h2 = curl_slist_append(h, auth);
		h = h2 ? h2 : h;
	}
	curl_easy_setopt(c, CURLOPT_URL, target);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	else
		ps_err("--server %s: %s", url, curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc == CURLE_OK ? 0 : -1;
}

int ps_client_exec(const struct ps_opts *o, const char *code, size_t code_len, const char *in,
		   size_t in_len)
{
	char *body;
	size_t body_len;
	struct answer a = { NULL, 0 };
	long status = 0;
	int ret = PS_EXIT_INTERNAL;

	if (o->pretty) {
		ps_err("--pretty: not available with --server (the server's verdict is printed as sent)");
		return PS_EXIT_USAGE;
	}
	if (strncmp(o->server, "unix:", 5) && strncmp(o->server, "http://", 7)) {
		ps_err("--server %s: expected http://HOST:PORT or unix:/path", o->server);
		return PS_EXIT_USAGE;
	}
	body = build_body(o, code, code_len, in, in_len, &body_len);
	if (!body) {
		ps_err("building the request: out of memory");
		return PS_EXIT_INTERNAL;
	}
	if (post(o->server, body, body_len, &status, &a) == 0 && a.buf)
		ret = handle_answer(o->server, status, &a.buf, a.len, o->output_dir);
	else if (!a.buf && status)
		ps_err("--server %s: HTTP %ld with an empty answer", o->server, status);
	free(body);
	free(a.buf);
	return ret;
}
