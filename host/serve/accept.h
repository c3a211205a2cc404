/* The front's own accept loop, the bounds on connections, and a rate-limited log.
 * libmicrohttpd's accept loop spins on EMFILE (and logs each spin), and it bounds nothing a
 * connection may hold before it proves it may use the server; ours hands each accepted
 * socket to MHD_add_connection and keeps these bounds:
 *   - connections: at most max_conns (a budget of descriptors; see cmd_serve.c), past it a
 *     503 written straight on the socket and closed;
 *   - untrusted connections (no request on them has passed the token check yet): at most
 *     max_untrusted at once, each cut untrusted_ms after it was accepted;
 *   - out of descriptors: accept pauses (the backlog waits), one log line a while. */
#ifndef PS_ACCEPT_H
#define PS_ACCEPT_H

#include <microhttpd.h>
#include <stdarg.h>

struct ps_accept_config {
	int listen_fd;			/* bound and listening; taken over */
	unsigned max_conns;
	unsigned max_untrusted;
	unsigned untrusted_ms;
};

struct ps_acceptor;

/* Before the daemon exists (its notify callback needs ours). NULL when out of memory. */
struct ps_acceptor *ps_accept_new(const struct ps_accept_config *cfg);
/* Start accepting into d. 0, or -errno. */
int ps_accept_run(struct ps_acceptor *a, struct MHD_Daemon *d);
/* Stop accepting and close the listening socket (drain); connections stay. */
void ps_accept_stop(struct ps_acceptor *a);
/* After the daemon is stopped. */
void ps_accept_free(struct ps_acceptor *a);

/* What the bounds did, for /metrics. */
struct ps_accept_stats {
	unsigned long refused_budget;	/* past max_conns */
	unsigned long refused_untrusted;	/* past max_untrusted */
	unsigned long cut;		/* untrusted past untrusted_ms */
	unsigned long paused;		/* accept paused, out of descriptors (or another error) */
	unsigned conns, untrusted;	/* now */
};
void ps_accept_stats(struct ps_acceptor *a, struct ps_accept_stats *st);

/* MHD_OPTION_NOTIFY_CONNECTION, with cls the acceptor. */
void ps_accept_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
/* A request on c passed the token check: the connection is no longer bounded as untrusted. */
void ps_accept_trust(struct MHD_Connection *c);

/* stderr, at most a few lines a second whatever the rate of calls (a storm of errors must
 * not become a storm of writes); says how many it left out. MHD's messages come here too. */
void ps_serve_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ps_serve_vlog(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
