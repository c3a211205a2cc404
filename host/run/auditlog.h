/* The audit log: one JSON line per run and, in serve, one per refused request, for an
 * operator's monitoring. Shared by `pysnip exec --audit-log` and `pysnip serve --audit-log`.
 *
 * Append-only (O_APPEND), one write(2) per line, so that lines of concurrent runs never
 * interleave; never fatal: a failed write (a full disk) is reported on stderr,
 * once per kind of error, and counted; the run goes on. "-" is standard output, written
 * without blocking (a line that would block is dropped and counted). The bearer token is
 * never written: only its id (a one-way digest, computed by the caller). */
#ifndef PS_AUDITLOG_H
#define PS_AUDITLOG_H

#include <stddef.h>

struct ps_auditlog;

/* 0, or -1 with "audit log FILE: reason" in err. */
int ps_auditlog_open(const char *path, struct ps_auditlog **out, char *err, size_t errlen);
void ps_auditlog_close(struct ps_auditlog *l);	/* writes what waits; reports lost lines */
/* serve: a thread of its own writes the lines from a bounded queue, so a slow disk holds no
 * answer up (a line that finds the queue full is lost, and counted). Not for a process that
 * enters namespaces after (exec, whose parent must stay single-threaded). 0 or -errno. */
int ps_auditlog_start_writer(struct ps_auditlog *l);

/* Who asked: NULL fields are written as null. */
struct ps_audit_who {
	const char *request_id;
	const char *client;	/* "127.0.0.1:5555", "unix", "local" for exec */
	const char *token_id;	/* never the token */
};

/* A run: the verdict (its JSON text) gives policy, status, exit code, usage and denials
 * (each with the verdict's own fields). index >= 0 for an entry of a batch. */
void ps_auditlog_run(struct ps_auditlog *l, const struct ps_audit_who *who, long index,
		     const char *verdict_json);
/* A request refused before any run: its HTTP status, method, path and the reason given. */
void ps_auditlog_refused(struct ps_auditlog *l, const struct ps_audit_who *who, unsigned code,
			 const char *method, const char *path, const char *reason);

/* A fresh request id ("r-<16 hex>"), for a caller that was given none. */
void ps_auditlog_new_id(char *buf, size_t len);

#endif
