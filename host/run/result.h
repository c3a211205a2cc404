/* The verdict of DESIGN.md section 2: classify what the supervisor saw and render it as JSON. */
#ifndef PS_RESULT_H
#define PS_RESULT_H

#include <stdbool.h>

#include "policy/policy.h"
#include "worker.h"

#define PS_VERDICT_VERSION 1

enum ps_status {
	PS_STATUS_OK,
	PS_STATUS_EXCEPTION,
	PS_STATUS_DENIED,
	PS_STATUS_TIMEOUT,
	PS_STATUS_CPU_LIMIT,
	PS_STATUS_MEMORY_LIMIT,
	PS_STATUS_OUTPUT_LIMIT,
	PS_STATUS_SIGNAL,
	PS_STATUS_INTERNAL_ERROR,
	PS_STATUS_COUNT,
};

const char *ps_status_name(enum ps_status s);

/* The verdict as JSON text (malloc'd), or NULL on allocation failure.
 * host_error: a host failure before or around the run (status internal_error). */
char *ps_verdict_render(const struct ps_policy *p, const struct ps_run *r,
			const struct ps_outcome *o, bool pretty);

/* The same, and the files the run left (checked, decoded: to write to --output-dir) into
 * files when not NULL; the caller frees them (ps_outfiles_free). */
struct ps_outfiles;
char *ps_verdict_render_files(const struct ps_policy *p, const struct ps_run *r,
			      const struct ps_outcome *o, bool pretty, struct ps_outfiles *files);

/* A verdict for a run that never started (host failure), same schema. */
char *ps_verdict_internal_error(const struct ps_policy *p, const char *message, bool pretty);

/* Bytes to a JSON string literal body: valid UTF-8 kept, control characters and NUL escaped,
 * each invalid byte B written as \udcXX (Python's surrogateescape), so nothing is dropped.
 * Returns a malloc'd quoted string. */
char *ps_json_quote_bytes(const char *buf, size_t len);
/* Its inverse: the bytes of the JSON string that starts at q (a '"'), \udc80-\udcff back to
 * the byte they stand for; malloc'd (not NUL-terminated) with *len, or NULL if q is no string. */
char *ps_json_unquote_bytes(const char *q, size_t *len);

#endif
