/* Messages on a socket: receive a whole multipart message and parse it (wire.c), build and
 * send signed ones. A channel belongs to one thread; iopub is shared under its lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "kernel_int.h"

struct ps_krecv {
	zmq_msg_t msgs[PS_KWIRE_MAX_FRAMES];
	struct ps_kframe frames[PS_KWIRE_MAX_FRAMES];
	size_t n;
};

/* PYSNIP_KERNEL_TRACE=PATH: a line per message received and sent and per engine call,
 * "<unix time in us> <what>", to see where a request's time goes
 * (tests/bench/bench_kernel_trace.py). One write(2) per line: the two threads' lines never mix.
 * Off (the default), it costs a test of one descriptor. */
static int trace_fd = -1;

void ps_ktrace_open(void)
{
	const char *path = getenv("PYSNIP_KERNEL_TRACE");

	if (path && *path)
		trace_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

void ps_ktrace(const char *what, const char *detail)
{
	struct timespec t;
	char line[256];
	int n;

	if (trace_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &t);
	n = snprintf(line, sizeof(line), "%lld.%06ld %s%s%s\n", (long long)t.tv_sec,
		     t.tv_nsec / 1000, what, detail ? " " : "", detail ? detail : "");
	if (n > 0 && write(trace_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line)) < 0)
		trace_fd = -1;	/* the trace's file went away: stop tracing */
}

void ps_klog(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "pysnip-kernel: %s\n", line);
}

static void release(struct ps_krecv *r)
{
	for (size_t i = 0; i < r->n; i++)
		zmq_msg_close(&r->msgs[i]);
	r->n = 0;
}

void ps_krecv_free(struct ps_krecv *r)
{
	if (r) {
		release(r);
		free(r);
	}
}

/* Every frame of one message (ZeroMQ delivers them together). Frames past the most we parse
 * are still read, so the next message starts clean, and counted. */
static int recv_frames(void *sock, struct ps_krecv *r, size_t *total)
{
	zmq_msg_t extra;
	int more;
	size_t len = sizeof(more);

	release(r);
	*total = 0;
	do {
		zmq_msg_t *m = r->n < PS_KWIRE_MAX_FRAMES ? &r->msgs[r->n] : &extra;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, sock, *total ? 0 : ZMQ_DONTWAIT) < 0) {
			int e = errno;

			zmq_msg_close(m);
			return e == ETERM ? -2 : e == EAGAIN && !*total ? -3 : -1;
		}
		(*total)++;
		if (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &len) < 0)
			more = 0;
		if (m == &extra) {
			zmq_msg_close(m);
		} else {
			r->frames[r->n].p = zmq_msg_data(m);
			r->frames[r->n].n = zmq_msg_size(m);
			r->n++;
		}
	} while (more);
	return 0;
}

int ps_kchan_recv(struct ps_kchan *ch, void *sock, struct ps_krecv **store, struct ps_kmsg *m)
{
	char err[160];
	size_t total;
	int rc;

	if (!*store && !(*store = calloc(1, sizeof(**store))))
		return -1;
	rc = recv_frames(sock, *store, &total);
	if (rc == -2)
		return -2;
	if (rc == -3)
		return -3;	/* nothing there (a spurious wake) */
	if (rc < 0) {
		ps_klog("%s: recv: %s", ch->name, zmq_strerror(errno));
		return -1;
	}
	if (total > PS_KWIRE_MAX_FRAMES) {
		ps_klog("%s: dropped a message: too many frames (%zu, at most %d)", ch->name, total,
			PS_KWIRE_MAX_FRAMES);
		return -1;
	}
	if (ps_kmsg_parse(m, (*store)->frames, (*store)->n, &ch->signer, err, sizeof(err)) < 0) {
		ps_klog("%s: dropped a message: %s", ch->name, err);
		return -1;
	}
	ps_ktrace("recv", m->msg_type);
	return 0;
}

static int send_frame(void *sock, const void *p, size_t n, bool more)
{
	return zmq_send(sock, p, n, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

static int send_locked(struct ps_kchan *ch, void *sock, const struct ps_kframe *ids, size_t nids,
		       const struct ps_kframe *parent, const char *msg_type, const char *content)
{
	char header[512], topic[128], sig[65];
	int hn = ps_kwire_header(header, sizeof(header), ch->k->session, msg_type);
	struct ps_kframe parts[4];

	if (hn < 0)
		return -1;
	parts[0] = (struct ps_kframe){ (const unsigned char *)header, (size_t)hn };
	parts[1] = parent ? *parent : (struct ps_kframe){ (const unsigned char *)"{}", 2 };
	parts[2] = (struct ps_kframe){ (const unsigned char *)"{}", 2 };
	parts[3] = (struct ps_kframe){ (const unsigned char *)content, strlen(content) };
	if (ps_ksigner_sign(&ch->signer, parts, sig) < 0)
		return -1;
	if (!ids) {	/* iopub: a topic as ipykernel's, clients subscribe to everything */
		snprintf(topic, sizeof(topic), "kernel.%s.%s", ch->k->session, msg_type);
		if (send_frame(sock, topic, strlen(topic), true) < 0)
			return -1;
	}
	for (size_t i = 0; i < nids; i++)
		if (send_frame(sock, ids[i].p, ids[i].n, true) < 0)
			return -1;
	if (send_frame(sock, PS_KWIRE_DELIM, sizeof(PS_KWIRE_DELIM) - 1, true) < 0 ||
	    send_frame(sock, sig, strlen(sig), true) < 0)
		return -1;
	for (int i = 0; i < 4; i++)
		if (send_frame(sock, parts[i].p, parts[i].n, i < 3) < 0)
			return -1;
	return 0;
}

int ps_kchan_send(struct ps_kchan *ch, void *sock, const struct ps_kframe *ids, size_t nids,
		  const struct ps_kframe *parent, const char *msg_type, const char *content)
{
	bool iopub = sock == ch->k->iopub;
	int rc;

	if (iopub)
		pthread_mutex_lock(&ch->k->iopub_lock);
	rc = send_locked(ch, sock, ids, nids, parent, msg_type, content);
	if (iopub)
		pthread_mutex_unlock(&ch->k->iopub_lock);
	ps_ktrace("send", msg_type);
	if (rc < 0 && errno != ETERM)
		ps_klog("%s: sending %s: %s", ch->name, msg_type, zmq_strerror(errno));
	return rc;
}

int ps_kchan_publish(struct ps_kchan *ch, const struct ps_kframe *parent, const char *msg_type,
		     const char *content)
{
	return ps_kchan_send(ch, ch->k->iopub, NULL, 0, parent, msg_type, content);
}

int ps_kchan_reply(struct ps_kchan *ch, const struct ps_kmsg *m, const char *msg_type,
		   cJSON *content)
{
	char *text = content ? cJSON_PrintUnformatted(content) : NULL;
	int rc = -1;

	if (text)
		rc = ps_kchan_send(ch, ch->sock, m->ids, m->nids, &m->header, msg_type, text);
	else
		ps_klog("%s: %s: out of memory", ch->name, msg_type);
	free(text);
	cJSON_Delete(content);
	return rc;
}

int ps_kchan_status(struct ps_kchan *ch, const struct ps_kframe *parent, const char *state)
{
	char content[64];

	snprintf(content, sizeof(content), "{\"execution_state\":\"%s\"}", state);
	return ps_kchan_publish(ch, parent, "status", content);
}
