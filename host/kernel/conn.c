/* The connection file jupyter_client writes: ports, ip, transport, key, signature scheme. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kernel_int.h"
#include "util/util.h"

static int port_field(const char *path, const cJSON *j, const char *name, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble ||
	    v->valueint < 1 || v->valueint > 65535) {
		ps_err("connection file %s: field %s: not a port number (1-65535)", path, name);
		return -1;
	}
	*out = v->valueint;
	return 0;
}

static int string_field(const char *path, const cJSON *j, const char *name, const char *dflt,
			char *out, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	if (!v && dflt) {
		snprintf(out, len, "%s", dflt);
		return 0;
	}
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len) {
		ps_err("connection file %s: field %s: not a string (of at most %zu bytes)", path,
		       name, len - 1);
		return -1;
	}
	snprintf(out, len, "%s", v->valuestring);
	return 0;
}

static int parse(const char *path, const cJSON *j, struct ps_kconn *c)
{
	static const struct { const char *name; size_t off; } ports[] = {
		{ "shell_port", offsetof(struct ps_kconn, shell_port) },
		{ "iopub_port", offsetof(struct ps_kconn, iopub_port) },
		{ "stdin_port", offsetof(struct ps_kconn, stdin_port) },
		{ "control_port", offsetof(struct ps_kconn, control_port) },
		{ "hb_port", offsetof(struct ps_kconn, hb_port) },
	};
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "key");
	char scheme[32];

	for (size_t i = 0; i < PS_ARRAY_LEN(ports); i++)
		if (port_field(path, j, ports[i].name, (int *)((char *)c + ports[i].off)) < 0)
			return -1;
	if (string_field(path, j, "transport", "tcp", c->transport, sizeof(c->transport)) < 0 ||
	    string_field(path, j, "ip", "127.0.0.1", c->ip, sizeof(c->ip)) < 0 ||
	    string_field(path, j, "signature_scheme", "hmac-sha256", scheme, sizeof(scheme)) < 0)
		return -1;
	if (strcmp(c->transport, "tcp") && strcmp(c->transport, "ipc")) {
		ps_err("connection file %s: field transport: '%s' (tcp or ipc)", path, c->transport);
		return -1;
	}
	if (strcmp(scheme, "hmac-sha256")) {
		ps_err("connection file %s: field signature_scheme: '%s' (only hmac-sha256)", path,
		       scheme);
		return -1;
	}
	if (key && !cJSON_IsString(key)) {
		ps_err("connection file %s: field key: not a string", path);
		return -1;
	}
	c->key = strdup(key ? key->valuestring : "");
	if (!c->key) {
		ps_err("connection file %s: out of memory", path);
		return -1;
	}
	c->keylen = strlen(c->key);
	return 0;
}

int ps_kconn_load(const char *path, struct ps_kconn *c)
{
	char *text = NULL;
	size_t len;
	cJSON *j = NULL;
	int rc = -1, e;

	memset(c, 0, sizeof(*c));
	e = ps_read_file(path, &text, &len);
	if (e < 0) {
		ps_err("connection file %s: %s", path, strerror(-e));
		goto out;
	}
	j = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(j)) {
		ps_err("connection file %s: not a JSON object", path);
		goto out;
	}
	rc = parse(path, j, c);
out:
	if (rc < 0)
		ps_kconn_free(c);
	cJSON_Delete(j);
	free(text);
	return rc;
}

void ps_kconn_free(struct ps_kconn *c)
{
	free(c->key);
	c->key = NULL;
}

void ps_kconn_endpoint(const struct ps_kconn *c, int port, char *buf, size_t len)
{
	if (!strcmp(c->transport, "ipc"))
		snprintf(buf, len, "ipc://%s-%d", c->ip, port);
	else
		snprintf(buf, len, "tcp://%s:%d", c->ip, port);
}
