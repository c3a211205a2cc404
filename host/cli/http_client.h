/* `pysnip exec --server URL`: send the snippet to a running `pysnip serve` and print the
 * verdict exactly as `pysnip exec` would. */
#ifndef PS_HTTP_CLIENT_H
#define PS_HTTP_CLIENT_H

#include <stddef.h>

#include "cli.h"

/* URL: http://HOST:PORT or unix:/path. The token, if the server wants one, comes from the
 * PYSNIP_TOKEN environment variable. Returns pysnip's exit status: 0 a verdict was printed,
 * 1 the server refused the request (4xx, message on stderr), 2 the server or the connection
 * failed (an internal_error verdict is printed when the server sent one). */
int ps_client_exec(const struct ps_opts *o, const char *code, size_t code_len, const char *in,
		   size_t in_len);

/* Set by pysnip-serve, which links libcurl; NULL in pysnip, where `exec --server` execs
 * pysnip-serve instead, so that a one-shot run never loads libcurl. */
extern int (*ps_exec_client)(const struct ps_opts *o, const char *code, size_t code_len,
			     const char *in, size_t in_len);

#endif
