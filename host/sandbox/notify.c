/* `pysnip learn`'s seccomp supervisor: the worker's filter answers every syscall outside the
 * policy with SECCOMP_RET_USER_NOTIF (seccomp.c, learn mode); the worker sends the listener
 * descriptor over its filter channel (SCM_RIGHTS) right after loading it, and the supervisor
 * answers each notification through libseccomp's notify API and records the syscall.
 *
 * The supervisor is a process of its own, above the one that runs the worker (the "runner"):
 * the runner enters namespaces (a new PID namespace for its children refuses CLONE_THREAD, a
 * user namespace a multi-threaded caller), so it can host no thread; it hands its end of the
 * filter channel up over the uplink made here before it forked.
 *
 * A call goes on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) unless it is one pysnip never allows, or
 * an argument-checked one whose arguments failed the check: those fail with EPERM and are
 * recorded as refused, never run. Learning must not execute what no policy could grant.
 * Threads (clone with CLONE_THREAD and no namespace flag) go on and are recorded, since a
 * policy can grant them ("seccomp.threads"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"
#include "syscall_groups.h"
#include "util/util.h"

#define CLONE_NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
			CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

enum stage { AWAIT_CHANNEL, AWAIT_LISTENER, SERVING, DONE };

struct ps_notify {
	int uplink[2];		/* [0] supervisor's, [1] runner's */
	int channel;		/* the worker's filter channel, parent end */
	int listener;
	enum stage stage;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	struct ps_notify_report rep;
};

bool ps_notify_available(void)
{
	uint32_t act = SECCOMP_RET_USER_NOTIF;

	return seccomp_api_get() >= 5 &&
	       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0;
}

int ps_notify_new(struct ps_notify **out)
{
	struct ps_notify *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->channel = n->listener = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, n->uplink) < 0) {
		int e = errno;

		free(n);
		return -e;
	}
	if (seccomp_notify_alloc(&n->req, &n->resp) < 0) {
		close(n->uplink[0]);
		close(n->uplink[1]);
		free(n);
		return -ENOMEM;
	}
	*out = n;
	return 0;
}

/* A descriptor sent on sock, or -1 at EOF (the sender went without sending one). */
static int recv_fd(int sock)
{
	char c;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

void ps_notify_runner_side(struct ps_notify *n)
{
	close(n->uplink[0]);
	n->uplink[0] = -1;
}

void ps_notify_supervisor_side(struct ps_notify *n)
{
	close(n->uplink[1]);
	n->uplink[1] = -1;
}

int ps_notify_start(struct ps_notify *n, int channel)
{
	return ps_send_fd(n->uplink[1], channel, 'F');
}

int ps_notify_fd(const struct ps_notify *n)
{
	switch (n->stage) {
	case AWAIT_CHANNEL:
		return n->uplink[0];
	case AWAIT_LISTENER:
		return n->channel;
	case SERVING:
		return n->listener;
	case DONE:
		break;
	}
	return -1;
}

static enum ps_notify_refusal judge(struct ps_notify *n, const struct seccomp_notif *req)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, req->data.nr);
	enum ps_notify_refusal r = PS_NOTIFY_RAN;

	if (req->data.nr == __NR_clone && (req->data.args[0] & CLONE_THREAD) &&
	    !(req->data.args[0] & CLONE_NS_FLAGS)) {
		n->rep.threads = true;
	} else if (!name || ps_syscall_never_allowed(name)) {
		r = PS_NOTIFY_NEVER;
	} else if (ps_filter_is_arg_checked(name)) {
		r = PS_NOTIFY_ARGS;	/* reached us: its arguments failed pysnip's own check */
	}
	free(name);
	return r;
}

static void answer(struct ps_notify *n)
{
	enum ps_notify_refusal r;

	memset(n->req, 0, sizeof(*n->req));
	if (seccomp_notify_receive(n->listener, n->req) < 0)
		return;		/* the call was interrupted, or its caller went */
	r = judge(n, n->req);
	if (n->req->data.nr < PS_NOTIFY_MAX_NR) {
		n->rep.count[n->req->data.nr]++;
		if (r > n->rep.refused[n->req->data.nr])
			n->rep.refused[n->req->data.nr] = (uint8_t)r;
	}
	memset(n->resp, 0, sizeof(*n->resp));
	n->resp->id = n->req->id;
	if (r == PS_NOTIFY_RAN)
		n->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	else
		n->resp->error = -EPERM;
	seccomp_notify_respond(n->listener, n->resp);	/* ENOENT: the caller is gone */
}

static void finish(struct ps_notify *n)
{
	int *fds[] = { &n->channel, &n->listener };

	for (size_t i = 0; i < PS_ARRAY_LEN(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	n->stage = DONE;
}

void ps_notify_step(struct ps_notify *n, short revents)
{
	int fd;

	switch (n->stage) {
	case AWAIT_CHANNEL:
		n->channel = recv_fd(n->uplink[0]);
		n->stage = n->channel < 0 ? DONE : AWAIT_LISTENER;
		return;
	case AWAIT_LISTENER:
		fd = recv_fd(n->channel);
		close(n->channel);
		n->channel = -1;
		n->listener = fd;
		n->rep.got_listener = fd >= 0;
		n->stage = fd < 0 ? DONE : SERVING;
		return;
	case SERVING:
		if (revents & POLLIN)
			answer(n);
		else if (revents & (POLLHUP | POLLERR | POLLNVAL))
			finish(n);	/* every task of the filter is gone */
		return;
	case DONE:
		return;
	}
}

const struct ps_notify_report *ps_notify_report(const struct ps_notify *n)
{
	return &n->rep;
}

void ps_notify_free(struct ps_notify *n)
{
	if (!n)
		return;
	finish(n);
	for (int i = 0; i < 2; i++)
		if (n->uplink[i] >= 0)
			close(n->uplink[i]);
	seccomp_notify_free(n->req, n->resp);
	free(n);
}
