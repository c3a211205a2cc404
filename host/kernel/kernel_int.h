/* The kernel's insides, shared by kernel.c (sockets, threads, loop), conn.c (connection file)
 * and handlers.c (what each request does). */
#ifndef PS_KERNEL_INT_H
#define PS_KERNEL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "kernel.h"
#include "wire.h"

struct ps_kconn {
	char transport[8];	/* "tcp" or "ipc" */
	char ip[256];
	int shell_port, iopub_port, stdin_port, control_port, hb_port;
	char *key;		/* the HMAC key ("" when unsigned) */
	size_t keylen;
};

/* 0, or -1 after a message naming the file and field. */
int ps_kconn_load(const char *path, struct ps_kconn *c);
void ps_kconn_free(struct ps_kconn *c);
/* "tcp://IP:PORT" or "ipc://IP-PORT" (jupyter_client's spelling of both). */
void ps_kconn_endpoint(const struct ps_kconn *c, int port, char *buf, size_t len);

struct ps_kernel;

/* A socket with the thread that owns it and that thread's signer. */
struct ps_kchan {
	struct ps_kernel *k;
	void *sock;
	const char *name;		/* "shell", "control" */
	struct ps_ksigner signer;
};

struct ps_kernel {
	const struct ps_kernel_opts *opts;
	struct ps_kconn conn;
	void *ctx;
	void *iopub, *stdin_sock, *hb;
	void *wake_tx, *wake_rx;	/* inproc pair: control -> shell, "stop waiting" */
	pthread_mutex_t iopub_lock;	/* iopub is written by both threads */
	struct ps_kreplay replay;
	struct ps_kchan shell, control;
	char session[33];		/* this kernel's session id, hex */
	atomic_bool stopping;
	atomic_bool interrupted;	/* since the running cell began */
	atomic_bool busy;		/* a cell is in the engine */
	atomic_uint cell_seq;		/* which cell: one more for each */
	unsigned int_seq, int_retries;	/* control thread: an interrupt to repeat (kernel.c) */
	int execution_count;
	bool aborting;			/* while the queued below are served: their cells abort */
	/* Shell messages already waiting when a cell failed with stop_on_error, taken before its
	 * reply went out: their execute_requests are aborted, the rest served, in order. One a
	 * client sends once it has the failure's reply is not among them (nbclient's next cell
	 * after an allowed error), as with ipykernel's stop_on_error_timeout of 0. */
	struct ps_kqueued *queued;
	size_t n_queued;
	struct ps_kengine *engine;	/* the session behind the cells (engine.c) */
	struct ps_khistory *history;	/* the cells run, for history_request (history.c) */
};

/* Send a message on ch's socket to ids (a reply), or on iopub (ids NULL) with the topic
 * "kernel.<session>.<type>". parent is the request's header frame as received (NULL: {}).
 * content is JSON text. 0, or -1 (logged). */
int ps_kchan_send(struct ps_kchan *ch, void *sock, const struct ps_kframe *ids, size_t nids,
		  const struct ps_kframe *parent, const char *msg_type, const char *content);
int ps_kchan_publish(struct ps_kchan *ch, const struct ps_kframe *parent, const char *msg_type,
		     const char *content);
/* A reply to m on the socket m came in on; content is consumed (cJSON_Delete). */
int ps_kchan_reply(struct ps_kchan *ch, const struct ps_kmsg *m, const char *msg_type,
		   struct cJSON *content);
int ps_kchan_status(struct ps_kchan *ch, const struct ps_kframe *parent, const char *state);

/* Receive one whole multipart message from sock into frames (zmq_msg_t's kept in store). The
 * message is parsed, verified and returned in m: 0, or -1 when it was dropped (logged), -2 when
 * the context is going away. */
struct ps_krecv;
int ps_kchan_recv(struct ps_kchan *ch, void *sock, struct ps_krecv **store, struct ps_kmsg *m);
void ps_krecv_free(struct ps_krecv *r);

/* Run one request: status busy, the handler, status idle (handlers.c). */
void ps_kernel_dispatch(struct ps_kchan *ch, struct ps_kmsg *m);
struct ps_kqueued {
	struct ps_krecv *store;
	struct ps_kmsg m;
};
enum { PS_KQUEUED_MAX = 256 };
/* cell.c, before a failed cell's reply: take what the shell socket holds now (kernel.c). */
void ps_kernel_take_queued(struct ps_kchan *ch);

/* Ask the shell thread to leave its loop (shutdown) / to stop waiting for input (interrupt).
 * Called from the control thread. */
void ps_kernel_stop(struct ps_kernel *k);
void ps_kernel_wake_shell(struct ps_kernel *k);

/* The session engine behind the cells (engine.c). start: before any thread exists, since the
 * holder is forked from this process; returns pysnip's exit status. interrupt: thread-safe,
 * from the control thread. */
int ps_kernel_engine_start(struct ps_kernel *k);
void ps_kernel_engine_stop(struct ps_kernel *k);
void ps_kernel_interrupt(struct ps_kernel *k);
/* Control thread: interrupt the running cell, repeated while it runs (kernel.c). */
void ps_kernel_interrupt_cell(struct ps_kernel *k);
/* The session, once started (shell thread only: waits for the start). NULL with why. */
struct ps_session;
struct ps_session *ps_kernel_session(struct ps_kernel *k, const char **why);
struct ps_session *ps_kernel_session_renew(struct ps_kernel *k, char *err, size_t errlen);

/* The requests that need the engine (engine.c); each sends its reply. */
typedef void ps_khandler(struct ps_kchan *ch, const struct ps_kmsg *m);
ps_khandler ps_kh_execute, ps_kh_complete, ps_kh_inspect, ps_kh_is_complete;

/* Text for a JSON string from output chunks cut anywhere: a character cut at a chunk's end is
 * kept for the next (unless final), invalid bytes and NUL become U+FFFD. malloc'd, or NULL. */
struct ps_kutf8 {
	unsigned char carry[4];
	size_t carry_len;
};
char *ps_kutf8_take(struct ps_kutf8 *u, const char *data, size_t len, bool final);

/* An execute_request's user_expressions (an object of name: expression), evaluated in the
 * state after the cell (user_expr.c): the reply's user_expressions object. limits: the
 * cell's, as JSON text or NULL. Shell thread. */
struct cJSON *ps_kuser_expressions(struct ps_kernel *k, const struct cJSON *exprs,
				   const char *limits);

/* IPython's help syntax (pager.c): true when code is `name?`, `name??` or `?name`, with the
 * name. ps_kpage: the execute_reply's payload for it (a "page" of the inspection), or NULL
 * with err ("Object `x` not found." when the state has no such name). */
bool ps_kpage_name(const char *code, char *name, size_t len);
struct cJSON *ps_kpage(struct ps_kernel *k, const char *name, char *err, size_t errlen);

/* The cells run with store_history (history.c), for history_request; shell thread only.
 * add: *h is made on first use; output NULL when the cell had no result. */
struct ps_khistory;
void ps_khistory_add(struct ps_khistory **h, int line, const char *input, const char *output);
void ps_khistory_free(struct ps_khistory *h);
struct cJSON *ps_khistory_reply(const struct ps_khistory *h, const struct cJSON *body);

/* The timing trace of PYSNIP_KERNEL_TRACE (channel.c): open once at start; a line per event
 * (what and an optional detail), nothing when tracing is off. Thread-safe. */
void ps_ktrace_open(void);
void ps_ktrace(const char *what, const char *detail);

/* Log a line on stderr, "pysnip-kernel: ..." */
void ps_klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
