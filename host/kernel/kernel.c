/* The kernel process: bind the connection file's five sockets, then three threads.
 *   heartbeat  echoes pings (zmq_proxy of the socket onto itself, as ipykernel does)
 *   control    interrupt, shutdown, kernel_info while a cell runs: its own thread, so that
 *              an interrupt reaches a busy kernel; SIGINT and SIGTERM arrive here too
 *   shell      (the main thread) every other request, one at a time; stdin belongs to it
 * iopub is written by control and shell under a lock. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "kernel_int.h"
#include "util/util.h"

static int sig_pipe[2] = { -1, -1 };
static __thread bool on_control_thread;

static void on_signal(int sig)
{
	unsigned char c = (unsigned char)sig;
	int e = errno;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full pipe: a signal is already pending */
	}
	errno = e;
}

static int install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static void *open_socket(struct ps_kernel *k, int type, int port, const char *what)
{
	char ep[320];
	void *s = zmq_socket(k->ctx, type);
	int linger = 1000, one = 1;

	if (!s) {
		ps_err("zmq_socket(%s): %s", what, zmq_strerror(errno));
		return NULL;
	}
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
	if (type == ZMQ_ROUTER)	/* a client that reconnects with its identity takes it over */
		zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &one, sizeof(one));
	ps_kconn_endpoint(&k->conn, port, ep, sizeof(ep));
	if (zmq_bind(s, ep) < 0) {
		ps_err("%s: zmq_bind(%s): %s", what, ep, zmq_strerror(errno));
		zmq_close(s);
		return NULL;
	}
	return s;
}

static int open_sockets(struct ps_kernel *k)
{
	const struct ps_kconn *c = &k->conn;

	k->shell.sock = open_socket(k, ZMQ_ROUTER, c->shell_port, "shell");
	k->control.sock = open_socket(k, ZMQ_ROUTER, c->control_port, "control");
	k->stdin_sock = open_socket(k, ZMQ_ROUTER, c->stdin_port, "stdin");
	k->iopub = open_socket(k, ZMQ_PUB, c->iopub_port, "iopub");
	k->hb = open_socket(k, ZMQ_ROUTER, c->hb_port, "heartbeat");
	if (!k->shell.sock || !k->control.sock || !k->stdin_sock || !k->iopub || !k->hb)
		return -1;
	k->wake_rx = zmq_socket(k->ctx, ZMQ_PAIR);
	k->wake_tx = zmq_socket(k->ctx, ZMQ_PAIR);
	if (!k->wake_rx || !k->wake_tx || zmq_bind(k->wake_rx, "inproc://wake") < 0 ||
	    zmq_connect(k->wake_tx, "inproc://wake") < 0) {
		ps_err("inproc wake pair: %s", zmq_strerror(errno));
		return -1;
	}
	return 0;
}

static void close_sockets(struct ps_kernel *k)
{
	void **all[] = { &k->shell.sock, &k->control.sock, &k->stdin_sock, &k->iopub, &k->hb,
			 &k->wake_rx, &k->wake_tx };

	for (size_t i = 0; i < PS_ARRAY_LEN(all); i++)
		if (*all[i]) {
			zmq_close(*all[i]);
			*all[i] = NULL;
		}
}

static void *heartbeat_main(void *arg)
{
	struct ps_kernel *k = arg;

	zmq_proxy(k->hb, k->hb, NULL);	/* returns at zmq_ctx_shutdown (ETERM) */
	return NULL;
}

/* The wake pair tells the shell thread to stop waiting (shutdown, or an interrupt while a
 * cell waits for input). Only the control thread writes it. */
static void wake_shell(struct ps_kernel *k)
{
	/* A ZeroMQ socket is one thread's: the shell thread never needs to wake itself (it
	 * checks stopping after each request), so only the control thread sends. */
	if (on_control_thread)
		zmq_send(k->wake_tx, "w", 1, ZMQ_DONTWAIT);
}

void ps_kernel_stop(struct ps_kernel *k)
{
	atomic_store(&k->stopping, true);
	wake_shell(k);
}

void ps_kernel_wake_shell(struct ps_kernel *k)
{
	wake_shell(k);
}

static void on_pipe_signal(struct ps_kernel *k)
{
	unsigned char c;

	while (read(sig_pipe[0], &c, 1) == 1) {
		if (c == SIGINT) {
			ps_kernel_interrupt_cell(k);
		} else {
			ps_klog("SIGTERM: shutting down");
			ps_kernel_stop(k);
		}
	}
}

void ps_kernel_take_queued(struct ps_kchan *ch)
{
	struct ps_kernel *k = ch->k;

	if (!k->queued && !(k->queued = calloc(PS_KQUEUED_MAX + 1, sizeof(*k->queued))))
		return;
	while (k->n_queued < PS_KQUEUED_MAX) {
		struct ps_kqueued *q = &k->queued[k->n_queued];
		int rc = ps_kchan_recv(ch, ch->sock, &q->store, &q->m);

		if (rc == -3 || rc == -2)
			break;		/* nothing more waiting */
		if (rc == 0)
			k->n_queued++;	/* (a dropped message leaves its store for the next) */
	}
}

static void serve_queued(struct ps_kchan *ch)
{
	struct ps_kernel *k = ch->k;

	k->aborting = true;
	for (size_t i = 0; i < k->n_queued; i++) {
		ps_kernel_dispatch(ch, &k->queued[i].m);
		ps_kmsg_free(&k->queued[i].m);
	}
	for (size_t i = 0; i <= PS_KQUEUED_MAX; i++) {
		ps_krecv_free(k->queued[i].store);
		k->queued[i].store = NULL;
	}
	k->n_queued = 0;
	k->aborting = false;
}

static void serve_channel(struct ps_kchan *ch, struct ps_krecv **store)
{
	struct ps_kmsg m;
	int rc;

	while ((rc = ps_kchan_recv(ch, ch->sock, store, &m)) != -3 && rc != -2) {
		if (rc == 0) {
			ps_kernel_dispatch(ch, &m);
			ps_kmsg_free(&m);
		}
		if (ch->k->queued && ch->k->n_queued)
			serve_queued(ch);
		if (atomic_load(&ch->k->stopping))
			return;
	}
}

/* At shutdown, a cell still in the engine is interrupted until it ends: an interrupt that
 * reached the session before the cell began is lost, and a cell that ignores one is killed by
 * the engine after its grace period. Bounded: jupyter_client kills the kernel after its own
 * wait anyway, and the session host dies with it (PDEATHSIG). */
static void end_running_cell(struct ps_kernel *k)
{
	const struct timespec pause = { 0, 100 * 1000 * 1000 };

	for (int i = 0; i < 100 && atomic_load(&k->busy); i++) {
		ps_kernel_interrupt(k);
		nanosleep(&pause, NULL);
	}
}

/* An interrupt that reaches the session just before its cell's process exists is dropped
 * there; one that reached it makes it ignore the next ones (and kill the cell after its
 * grace period). So while the same cell runs, the interrupt is sent again every 100 ms for a
 * second: harmless when the first took, the fix when it did not. */
void ps_kernel_interrupt_cell(struct ps_kernel *k)
{
	ps_kernel_interrupt(k);
	if (atomic_load(&k->busy)) {
		k->int_seq = atomic_load(&k->cell_seq);
		k->int_retries = 10;
	}
}

static void repeat_interrupt(struct ps_kernel *k)
{
	if (!k->int_retries)
		return;
	if (!atomic_load(&k->busy) || atomic_load(&k->cell_seq) != k->int_seq) {
		k->int_retries = 0;
		return;
	}
	k->int_retries--;
	ps_kernel_interrupt(k);
}

static void *control_main(void *arg)
{
	struct ps_kernel *k = arg;
	struct ps_krecv *store = NULL;
	zmq_pollitem_t items[2] = { { k->control.sock, 0, ZMQ_POLLIN, 0 },
				    { NULL, sig_pipe[0], ZMQ_POLLIN, 0 } };

	on_control_thread = true;
	while (!atomic_load(&k->stopping)) {
		repeat_interrupt(k);
		if (zmq_poll(items, 2, k->int_retries ? 100 : -1) < 0) {
			if (errno == EINTR)
				continue;
			break;	/* ETERM: the context is going away */
		}
		if (items[1].revents & ZMQ_POLLIN)
			on_pipe_signal(k);
		if (items[0].revents & ZMQ_POLLIN)
			serve_channel(&k->control, &store);
	}
	ps_krecv_free(store);
	end_running_cell(k);
	return NULL;
}

static void drain_wake(struct ps_kernel *k)
{
	char c;

	while (zmq_recv(k->wake_rx, &c, 1, ZMQ_DONTWAIT) >= 0)
		;
}

static void shell_loop(struct ps_kernel *k)
{
	struct ps_krecv *store = NULL;
	zmq_pollitem_t items[2] = { { k->shell.sock, 0, ZMQ_POLLIN, 0 },
				    { k->wake_rx, 0, ZMQ_POLLIN, 0 } };

	while (!atomic_load(&k->stopping)) {
		if (zmq_poll(items, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (items[1].revents & ZMQ_POLLIN)
			drain_wake(k);
		if (items[0].revents & ZMQ_POLLIN)
			serve_channel(&k->shell, &store);
	}
	ps_krecv_free(store);
}

static int make_session_id(char out[33])
{
	unsigned char r[16];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -1;
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

static int setup(struct ps_kernel *k)
{
	char err[160];

	ps_ktrace_open();
	/* The sockets first, before libcrypto loads its configuration: see ps_kernel_run. */
	k->ctx = zmq_ctx_new();
	if (!k->ctx) {
		ps_err("zmq_ctx_new: %s", zmq_strerror(errno));
		return PS_EXIT_INTERNAL;
	}
	if (open_sockets(k) < 0)
		return PS_EXIT_USAGE;
	pthread_mutex_init(&k->iopub_lock, NULL);
	if (make_session_id(k->session) < 0 || ps_kreplay_init(&k->replay) < 0 ||
	    install_signals() < 0) {
		ps_err("kernel: setup: %s", strerror(errno));
		return PS_EXIT_INTERNAL;
	}
	k->shell.k = k->control.k = k;
	k->shell.name = "shell";
	k->control.name = "control";
	if (ps_ksigner_init(&k->shell.signer, k->conn.key, k->conn.keylen, &k->replay, err,
			    sizeof(err)) < 0 ||
	    ps_ksigner_init(&k->control.signer, k->conn.key, k->conn.keylen, &k->replay, err,
			    sizeof(err)) < 0) {
		ps_err("kernel: %s", err);
		return PS_EXIT_INTERNAL;
	}
	return PS_EXIT_OK;
}

static void teardown(struct ps_kernel *k)
{
	ps_ksigner_free(&k->shell.signer);
	ps_ksigner_free(&k->control.signer);
	ps_kreplay_free(&k->replay);
	ps_kconn_free(&k->conn);
	ps_khistory_free(k->history);
	free(k->queued);
	pthread_mutex_destroy(&k->iopub_lock);
}

int ps_kernel_run(const struct ps_kernel_opts *o)
{
	struct ps_kernel k = { .opts = o };
	pthread_t hb, control;
	bool hb_up = false, control_up = false;
	int rc;

	if (ps_kconn_load(o->connection_file, &k.conn) < 0)
		return PS_EXIT_USAGE;
	/* Bound first: a client that connects before the bind waits out libzmq's reconnect
	 * interval (100 ms). The session then starts in the background. */
	rc = setup(&k);
	if (rc != PS_EXIT_OK)
		goto out;
	rc = ps_kernel_engine_start(&k);
	if (rc != PS_EXIT_OK)
		goto out;
	hb_up = pthread_create(&hb, NULL, heartbeat_main, &k) == 0;
	control_up = pthread_create(&control, NULL, control_main, &k) == 0;
	if (!hb_up || !control_up) {
		ps_err("kernel: pthread_create: %s", strerror(errno));
		rc = PS_EXIT_INTERNAL;
		goto out;
	}
	ps_kchan_status(&k.shell, NULL, "starting");
	shell_loop(&k);
out:
	atomic_store(&k.stopping, true);
	if (k.ctx)
		zmq_ctx_shutdown(k.ctx);	/* every blocked call returns ETERM */
	if (hb_up)
		pthread_join(hb, NULL);
	if (control_up)
		pthread_join(control, NULL);
	ps_kernel_engine_stop(&k);	/* no thread left to interrupt it */
	close_sockets(&k);
	if (k.ctx)
		zmq_ctx_term(k.ctx);	/* after the lingering replies have gone */
	teardown(&k);
	return rc;
}
