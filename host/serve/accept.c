/* The front's accept loop and the bounds on connections (see accept.h). */
#include "accept.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/util.h"

enum {
	TICK_MS = 100,		/* how often untrusted connections are looked at */
	PAUSE_MS = 100,		/* accept paused this long when out of descriptors */
	ACCEPT_BATCH = 64,	/* accepts per wake-up */
	LOG_BURST = 5,		/* lines a second, at most */
};

/* One accepted socket, from MHD's STARTED notification to its CLOSED one. */
struct conn {
	struct conn *prev, *next;	/* in the untrusted list while !trusted */
	struct ps_acceptor *a;
	int fd;
	uint64_t accepted_us;
	bool trusted, cut;
};

struct ps_acceptor {
	struct ps_accept_config cfg;
	struct MHD_Daemon *d;
	pthread_mutex_t mu;		/* guards the list and the counts */
	struct conn untrusted;		/* list head */
	unsigned conns, n_untrusted;
	struct ps_accept_stats st;	/* counters only; conns/untrusted filled when read */
	uint64_t paused_until_us;
	int stop[2];
	int wake[2];			/* a connection started (non-blocking both ends) */
	pthread_t thread;
	bool running;
};

/* ---------------------------------------------------------------- log */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t log_window_us;
static unsigned log_lines;
static unsigned long log_left_out;

void ps_serve_vlog(const char *fmt, va_list ap)
{
	char line[512];
	uint64_t now = ps_now_us();
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	pthread_mutex_lock(&log_mu);
	if (now - log_window_us >= 1000000) {
		if (log_left_out)
			fprintf(stderr, "pysnip serve: (%lu more messages in the last second left out)\n",
				log_left_out);
		log_window_us = now;
		log_lines = 0;
		log_left_out = 0;
	}
	if (log_lines < LOG_BURST) {
		log_lines++;
		fprintf(stderr, "pysnip serve: %s\n", line);
	} else {
		log_left_out++;
	}
	pthread_mutex_unlock(&log_mu);
}

void ps_serve_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ps_serve_vlog(fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- connections */

static void unlink_untrusted(struct ps_acceptor *a, struct conn *c)
{
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->prev = c->next = c;
	a->n_untrusted--;
}

void ps_accept_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct ps_acceptor *a = cls;
	struct conn *c = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = calloc(1, sizeof(*c));
		if (!c) {
			/* untracked, so unbounded: not served */
			if (ci)
				shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		c->a = a;
		c->fd = ci ? ci->connect_fd : -1;
		c->accepted_us = ps_now_us();
		pthread_mutex_lock(&a->mu);
		c->next = a->untrusted.next;
		c->prev = &a->untrusted;
		c->next->prev = c;
		a->untrusted.next = c;
		a->conns++;
		a->n_untrusted++;
		pthread_mutex_unlock(&a->mu);
		*socket_context = c;
		/* MHD tells of a connection from another thread, after the accept: wake the
		 * accept loop, which may be waiting with no untrusted connection to time */
		(void)!write(a->wake[1], "w", 1);
		return;
	}
	if (!c)
		return;
	/* MHD closes the socket after this returns: from now on its fd is not ours to touch */
	pthread_mutex_lock(&a->mu);
	if (!c->trusted)
		unlink_untrusted(a, c);
	a->conns--;
	pthread_mutex_unlock(&a->mu);
	free(c);
	*socket_context = NULL;
}

void ps_accept_trust(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *c = ci ? ci->socket_context : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->a->mu);
	if (!c->trusted && !c->cut) {
		c->trusted = true;
		unlink_untrusted(c->a, c);
	}
	pthread_mutex_unlock(&c->a->mu);
}

/* Untrusted past their time: shut down, so that MHD's thread for it sees the end and closes
 * it (the fd stays valid while it is listed: CLOSED unlists it before MHD closes it). */
static void cut_overdue(struct ps_acceptor *a)
{
	uint64_t now = ps_now_us(), limit = (uint64_t)a->cfg.untrusted_ms * 1000;

	pthread_mutex_lock(&a->mu);
	for (struct conn *c = a->untrusted.next; c != &a->untrusted; c = c->next) {
		if (c->cut || now - c->accepted_us < limit || c->fd < 0)
			continue;
		shutdown(c->fd, SHUT_RDWR);
		c->cut = true;
		a->st.cut++;
	}
	pthread_mutex_unlock(&a->mu);
}

/* ---------------------------------------------------------------- accepting */

static void refuse(int fd, const char *why)
{
	char body[256], msg[512];
	int bl = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"field\":null}\n", why);
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
			 bl, body);

	if (n > 0 && (size_t)n < sizeof(msg))
		(void)send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

static bool out_of_resources(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void accept_some(struct ps_acceptor *a)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(a->cfg.listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		unsigned conns, untrusted;

		if (fd < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR || e == ECONNABORTED)
				return;
			/* Out of descriptors (or anything else): pause rather than spin; the backlog
			 * waits, and what gets freed meanwhile goes to the runs' channels. */
			ps_serve_log("accept: %s%s; not accepting for %d ms", strerror(e),
				     out_of_resources(e) ? " (the backlog waits)" : "", PAUSE_MS);
			a->paused_until_us = ps_now_us() + PAUSE_MS * 1000;
			pthread_mutex_lock(&a->mu);
			a->st.paused++;
			pthread_mutex_unlock(&a->mu);
			return;
		}
		pthread_mutex_lock(&a->mu);
		conns = a->conns;
		untrusted = a->n_untrusted;
		pthread_mutex_unlock(&a->mu);
		if (conns >= a->cfg.max_conns || untrusted >= a->cfg.max_untrusted) {
			bool budget = conns >= a->cfg.max_conns;

			refuse(fd, budget ? "too many connections; retry later"
					  : "too many connections that have not authenticated; retry "
					    "later");
			pthread_mutex_lock(&a->mu);
			if (budget)
				a->st.refused_budget++;
			else
				a->st.refused_untrusted++;
			pthread_mutex_unlock(&a->mu);
			continue;
		}
		/* MHD owns (and closes) fd from here, also when it fails */
		if (MHD_add_connection(a->d, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
			ps_serve_log("MHD_add_connection: %s", strerror(errno));
	}
}

static void *accept_main(void *arg)
{
	struct ps_acceptor *a = arg;

	for (;;) {
		struct pollfd p[3] = { { .fd = a->stop[0], .events = POLLIN },
				       { .fd = a->cfg.listen_fd, .events = POLLIN },
				       { .fd = a->wake[0], .events = POLLIN } };
		char drain[64];
		uint64_t now = ps_now_us();
		int timeout = -1;

		pthread_mutex_lock(&a->mu);
		if (a->n_untrusted)
			timeout = TICK_MS;
		pthread_mutex_unlock(&a->mu);
		if (now < a->paused_until_us) {
			p[1].fd = -1;
			timeout = (int)((a->paused_until_us - now + 999) / 1000);
		}
		if (poll(p, 3, timeout) < 0) {
			if (errno != EINTR) {
				/* never give up accepting: say so, and look again in a moment */
				ps_serve_log("accept loop: poll: %s", strerror(errno));
				a->paused_until_us = ps_now_us() + PAUSE_MS * 1000;
			}
			continue;
		}
		if (p[0].revents)
			return NULL;
		if (p[2].revents)
			(void)!read(a->wake[0], drain, sizeof(drain));
		cut_overdue(a);
		if (p[1].revents)
			accept_some(a);
	}
}

void ps_accept_stats(struct ps_acceptor *a, struct ps_accept_stats *st)
{
	pthread_mutex_lock(&a->mu);
	*st = a->st;
	st->conns = a->conns;
	st->untrusted = a->n_untrusted;
	pthread_mutex_unlock(&a->mu);
}

struct ps_acceptor *ps_accept_new(const struct ps_accept_config *cfg)
{
	struct ps_acceptor *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (pipe2(a->stop, O_CLOEXEC) < 0) {
		free(a);
		return NULL;
	}
	if (pipe2(a->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(a->stop[0]);
		close(a->stop[1]);
		free(a);
		return NULL;
	}
	a->cfg = *cfg;
	a->untrusted.next = a->untrusted.prev = &a->untrusted;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

int ps_accept_run(struct ps_acceptor *a, struct MHD_Daemon *d)
{
	int fl = fcntl(a->cfg.listen_fd, F_GETFL);

	a->d = d;
	/* poll says a connection waits; accept must not block when it was aborted since */
	if (fl < 0 || fcntl(a->cfg.listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (pthread_create(&a->thread, NULL, accept_main, a))
		return -EAGAIN;
	a->running = true;
	return 0;
}

void ps_accept_stop(struct ps_acceptor *a)
{
	if (!a)
		return;
	if (a->running) {
		(void)!write(a->stop[1], "x", 1);
		pthread_join(a->thread, NULL);
		a->running = false;
	}
	if (a->cfg.listen_fd >= 0) {
		close(a->cfg.listen_fd);
		a->cfg.listen_fd = -1;
	}
}

void ps_accept_free(struct ps_acceptor *a)
{
	if (!a)
		return;
	ps_accept_stop(a);
	close(a->stop[0]);
	close(a->stop[1]);
	close(a->wake[0]);
	close(a->wake[1]);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
