/* What cJSON lets through but a request must not (jsoncheck.c): shared by the parsers of
 * pysnip session's lines and the /v1/sessions bodies. */
#ifndef PS_JSONCHECK_H
#define PS_JSONCHECK_H

#include <stddef.h>

struct cJSON;

/* Bytes that are not UTF-8 (JSON is UTF-8), or a NUL, raw or as a \u0000 escape (a C string
 * would silently end there and run less code than was sent; cJSON copies a raw NUL into a
 * string and skips one between tokens). NULL when the text is fine, or what is wrong. */
const char *ps_json_text_problem(const char *s, size_t len);

/* A key obj (an object; anything else: NULL) has twice, or NULL: cJSON keeps every copy and finds the first, other parsers (a proxy's, a client's)
 * take the last, and a request must mean one thing. */
const char *ps_json_duplicate_key(const struct cJSON *obj);

/* At most max bytes of s (UTF-8), not cutting a sequence in two: for "%.*s" when a message
 * quotes a key back (half a character would make the message invalid JSON text). */
int ps_utf8_clip(const char *s, size_t max);

/* A message snprintf cut inside a UTF-8 sequence (here, or in a message it quotes): drop the
 * incomplete sequence at its end. */
void ps_utf8_trim_cut(char *buf);

#endif
