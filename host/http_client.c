/* `pysnip exec --server URL`: one HTTP/1.1 POST /v1/exec over TCP or a Unix socket.
 * Plain sockets: one request, `Connection: close`, the answer read to EOF. */
#include "http_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "commands.h"
#include "result.h"
#include "util.h"

enum { INPUT_MAX = 16 << 20, ANSWER_MAX = 512 << 20 };

static int connect_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		ps_err("--server unix:%s: path too long", path);
		return -1;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		ps_err("--server unix:%s: connect: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int connect_tcp(const char *url)
{
	char host[256], *colon, *slash;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int fd = -1, ret;

	snprintf(host, sizeof(host), "%s", url + 7);
	slash = strchr(host, '/');
	if (slash)
		*slash = '\0';
	colon = strrchr(host, ':');
	if (!colon || colon[1] == '\0' || strchr(colon, ']')) {
		ps_err("--server %s: expected http://HOST:PORT", url);
		return -1;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	ret = getaddrinfo(host, colon + 1, &hints, &res);
	if (ret) {
		ps_err("--server %s: %s", url, gai_strerror(ret));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	if (fd < 0)
		ps_err("--server %s: connect: %s", url, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

/* Append ,"key":<quoted bytes> to the body. */
static void add_string(FILE *f, const char *key, const char *buf, size_t len)
{
	char *q = ps_json_quote_bytes(buf, len);

	fprintf(f, ",\"%s\":%s", key, q ? q : "\"\"");
	free(q);
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

static int send_request(int fd, const char *url, const char *body, size_t len)
{
	const char *token = getenv("PYSNIP_TOKEN");
	char head[1024];
	int n;

	n = snprintf(head, sizeof(head),
		     "POST /v1/exec HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n%s%s%s\r\n",
		     strncmp(url, "unix:", 5) ? url + 7 : "localhost", len,
		     token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head)) {
		ps_err("--server %s: request header too long", url);
		return -1;
	}
	if (ps_write_all(fd, head, (size_t)n) < 0 || ps_write_all(fd, body, len) < 0) {
		ps_err("--server %s: sending the request: %s", url, strerror(errno));
		return -1;
	}
	return 0;
}

/* Status code and body of the answer; the body is printed (verdict) or reported (error). */
static int handle_answer(const char *url, char *ans, size_t len)
{
	char *body = strstr(ans, "\r\n\r\n");
	int code;
	size_t blen;

	if (sscanf(ans, "HTTP/1.%*d %d", &code) != 1 || !body) {
		ps_err("--server %s: not an HTTP answer", url);
		return PS_EXIT_INTERNAL;
	}
	body += 4;
	blen = len - (size_t)(body - ans);
	while (blen && (body[blen - 1] == '\n' || body[blen - 1] == '\r'))
		body[--blen] = '\0';
	if (code == 200 || (code == 500 && strstr(body, "\"status\":\"internal_error\""))) {
		if (ps_write_all(1, body, blen) < 0 || ps_write_all(1, "\n", 1) < 0) {
			ps_err("writing the verdict to stdout: %s", strerror(errno));
			return PS_EXIT_INTERNAL;
		}
		return code == 200 ? PS_EXIT_OK : PS_EXIT_INTERNAL;
	}
	ps_err("--server %s: HTTP %d: %s", url, code, body);
	return code >= 400 && code < 500 && code != 429 ? PS_EXIT_USAGE : PS_EXIT_INTERNAL;
}

int ps_client_exec(const struct ps_opts *o)
{
	char *code = NULL, *in = NULL, *body = NULL, *ans = NULL;
	size_t code_len = 0, in_len = 0, body_len, ans_len;
	int fd = -1, ret = PS_EXIT_USAGE, r;

	if (o->pretty) {
		ps_err("--pretty: not available with --server (the server's verdict is printed as sent)");
		return PS_EXIT_USAGE;
	}
	r = !strcmp(o->file, "-") ? ps_read_fd(0, &code, &code_len, INPUT_MAX)
				  : ps_read_file(o->file, &code, &code_len);
	if (r < 0) {
		ps_err("snippet %s: %s", o->file, strerror(-r));
		goto out;
	}
	if (o->stdin_file && (r = ps_read_file(o->stdin_file, &in, &in_len)) < 0) {
		ps_err("--stdin %s: %s", o->stdin_file, strerror(-r));
		goto out;
	}
	body = build_body(o, code, code_len, in, in_len, &body_len);
	if (!body) {
		ps_err("building the request: out of memory");
		ret = PS_EXIT_INTERNAL;
		goto out;
	}
	ret = PS_EXIT_INTERNAL;
	if (!strncmp(o->server, "unix:", 5))
		fd = connect_unix(o->server + 5);
	else if (!strncmp(o->server, "http://", 7))
		fd = connect_tcp(o->server);
	else {
		ps_err("--server %s: expected http://HOST:PORT or unix:/path", o->server);
		ret = PS_EXIT_USAGE;
		goto out;
	}
	if (fd < 0 || send_request(fd, o->server, body, body_len) < 0)
		goto out;
	r = ps_read_fd(fd, &ans, &ans_len, ANSWER_MAX);
	if (r < 0) {
		ps_err("--server %s: reading the answer: %s", o->server, strerror(-r));
		goto out;
	}
	ret = handle_answer(o->server, ans, ans_len);
out:
	if (fd >= 0)
		close(fd);
	free(code);
	free(in);
	free(body);
	free(ans);
	return ret;
}
