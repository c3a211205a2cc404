/* `pysnip session-host`: one session's trusted supervisor (session.h). Started by the front
 * (fork+exec, its socket on fd 3), it loads the policy, initialises the interpreter once (the
 * pristine state a restart forks from), forks the holder with every phase applied, then
 * serves the front's JSON lines one at a time:
 *   {"op":"exec","code":S,"limits":{..}|null}  -> stream/display/input_request events, verdict
 *   {"op":"query","kind":K,"code":S,"cursor":N} -> {"event":"query","result":{..}}
 *   {"op":"restart"} -> {"event":"restarted"};  {"op":"info"} -> {"event":"info",..}
 *   {"op":"interrupt"}, {"op":"input","value":S|null}: only while a cell runs
 * It ends when the front closes the socket, or a session limit is hit ({"event":"ended"}),
 * taking every process of the session with it. */
#include "host_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "python/interp.h"
#include "run/result.h"
#include "util/util.h"

enum { LINE_MAX_BYTES = 300 << 20, READY_WAIT_MS = 30000, DEFAULT_GRACE_MS = 2000,
       SHARED_UID_HEADROOM = 64 };

int ps_host_send(struct host *h, const char *line)
{
	(void)h;
	return ps_write_line(FRONT_FD, line, strlen(line)) < 0 ? -1 : 0;
}

static int send_error(struct host *h, const char *field, const char *msg)
{
	cJSON *m = cJSON_CreateObject();
	char *line;
	int ret;

	cJSON_AddStringToObject(m, "event", "error");
	if (field)
		cJSON_AddStringToObject(m, "field", field);
	cJSON_AddStringToObject(m, "message", msg);
	line = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	ret = line ? ps_host_send(h, line) : -1;
	free(line);
	return ret;
}

char *ps_host_next_line(struct host *h, bool *eof)
{
	char *nl, *line;
	size_t n;

	for (;;) {
		nl = h->in_len ? memchr(h->in, '\n', h->in_len) : NULL;
		if (nl)
			break;
		struct pollfd p = { .fd = FRONT_FD, .events = POLLIN };
		if (poll(&p, 1, 0) <= 0)
			return NULL;
		if (h->in_cap - h->in_len < 65536) {
			size_t cap = h->in_cap ? h->in_cap * 2 : 1 << 17;
			char *nb = cap <= LINE_MAX_BYTES ? realloc(h->in, cap) : NULL;

			if (!nb) {
				*eof = true;	/* a line we cannot hold: the front is broken */
				return NULL;
			}
			h->in = nb;
			h->in_cap = cap;
		}
		ssize_t r = read(FRONT_FD, h->in + h->in_len, h->in_cap - h->in_len);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0) {
			*eof = true;
			return NULL;
		}
		h->in_len += (size_t)r;
	}
	n = (size_t)(nl - h->in);
	line = malloc(n + 1);
	if (line) {
		memcpy(line, h->in, n);
		line[n] = '\0';
	}
	memmove(h->in, nl + 1, h->in_len - n - 1);
	h->in_len -= n + 1;
	return line;
}

/* --- the holder --- */

/* Three levels. A cell is foreground (SCHED_OTHER, nice 0). The holder forking the next
 * spare, the spare warming up and the old holder a kept cell replaced, tearing down, are
 * SCHED_IDLE: a woken process preempts an idle-class one at once, while batch or nice 19
 * alone kept the CPU for the rest of its slice (perf sched: the front's answer queued
 * 1.3 ms behind such a fork, the client's wake-up 0.9 ms behind a teardown). The host
 * raises the holder or the spare to the foreground whenever a cell waits on it
 * (host_cell.c), and a teardown still running when the next cell comes to SCHED_BATCH at
 * nice 19, which never preempts at its wakeup and still gets its share: it holds a slot of
 * the session's RLIMIT_NPROC until it is reaped, and a loaded machine must not starve it. */
void ps_host_renice(struct host *h, int pidfd, pid_t pid, enum ps_prio prio)
{
	static const int policy[] = { SCHED_OTHER, SCHED_IDLE, SCHED_BATCH };
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	struct sched_param sp = { 0 };

	if (!h->renice || pid <= 0 || pidfd < 0 || poll(&p, 1, 0) != 0)
		return;
	(void)sched_setscheduler(pid, policy[prio], &sp);
	(void)setpriority(PRIO_PROCESS, (id_t)pid, prio == PS_PRIO_FOREGROUND ? 0 : 19);
}

/* A cell starts on the CPU we run on: its command, its report and our verdict then pass
 * between two processes of one CPU, where each wakeup is a switch; on the scheduler's own
 * choice a woken process goes to an idle CPU, and in a VM an idle vCPU is halted, so that
 * each of the two hops could wait for the hypervisor to wake it (tens of us to over a ms).
 * A cell still running after PIN_US gets every CPU we have (host_cell.c, on_timer), so a
 * long cell is not held to one CPU beside other sessions' work. */
bool ps_host_pin(struct host *h, pid_t pid)
{
	return ps_pin_here(pid, &h->cpus);
}

void ps_host_unpin(struct host *h, pid_t pid)
{
	if (pid > 0)
		(void)sched_setaffinity(pid, sizeof(h->cpus), &h->cpus);
}

/* Background work at nice 19 (the holder forking and warming the next cell, an old holder's
 * teardown) and each cell at 0, so that the work between cells does not slow a verdict on
 * its way out: only where the host can put a process back to 0 (root, as the zygote's
 * spares), which is tried on the first holder. */
static void probe_renice(struct host *h)
{
	h->renice = geteuid() == 0 &&
		    setpriority(PRIO_PROCESS, (id_t)h->holder, 19) == 0 &&
		    setpriority(PRIO_PROCESS, (id_t)h->holder, 0) == 0;
	if (!h->renice)
		(void)setpriority(PRIO_PROCESS, (id_t)h->holder, 0);
}

void ps_host_drop_spare(struct host *h)
{
	if (h->spare_pidfd >= 0)
		close(h->spare_pidfd);
	h->spare_pidfd = -1;
	h->spare_inner = h->spare_parent = 0;
	h->spare.ours = h->spare.proc = 0;
}

static void resolve_spare(struct host *h)
{
	if (!h->spare_inner || h->spare.ours ||
	    ps_host_find_child(h->spare_parent, h->spare_inner, &h->spare) < 0)
		return;
	h->spare_pidfd = (int)syscall(SYS_pidfd_open, h->spare.ours, 0);
}

void ps_host_note_spare(struct host *h, pid_t inner, pid_t parent_proc)
{
	ps_host_drop_spare(h);
	h->spare_inner = inner;
	h->spare_parent = parent_proc;
	resolve_spare(h);
}

int ps_host_take_spare(struct host *h, struct ps_host_pid *out, int *pidfd)
{
	resolve_spare(h);
	if (!h->spare.ours || h->spare_pidfd < 0) {
		ps_host_drop_spare(h);
		return -1;
	}
	*out = h->spare;
	*pidfd = h->spare_pidfd;
	h->spare_pidfd = -1;
	ps_host_drop_spare(h);
	return 0;
}

void ps_host_read_idle_records(struct host *h)
{
	struct ps_status_rec rec;

	if (!h->holder_up)
		return;
	for (;;) {
		struct pollfd p = { .fd = h->hp.f.status, .events = POLLIN };

		if (poll(&p, 1, 0) <= 0 ||
		    read(h->hp.f.status, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
			return;
		if (strncmp(rec.msg, h->token, PS_SESSION_TOKEN_LEN))
			continue;
		if (rec.kind == PS_REC_CELL_FORKED)
			ps_host_note_spare(h, rec.phase, h->holder_proc);
		else if (rec.kind == PS_REC_CELL_REAPED)	/* the spare died: another comes */
			ps_host_drop_spare(h);
	}
}

/* The holder's limits: the session's memory and processes, no CPU limit of its own (each
 * cell has its CPU as a soft limit; the session's total is counted here). RLIMIT_NPROC
 * counts every process of the uid on the host: on a uid of its own (a policy's uid range, a
 * lock per uid) the session gets the holder, its cell and the policy's processes; on a uid
 * the policy gives every worker, headroom for the others' (SECURITY.md). */
static struct ps_limits holder_limits(const struct host *h)
{
	struct ps_limits l = h->cell;

	l.cpu_ms = PS_LIMIT_NONE;	/* (0 would be the tightest: a holder killed at once) */
	/* the holder, its cell (forked ahead), the holders the last two kept cells replaced
	 * (their teardown is not waited for: two can overlap when cells are quick and the
	 * teardown slow), and the first holder left a zombie once a cell replaced it
	 * (ps_host_reap_others: its pid is the session's process group) */
	l.processes = (h->cell.processes ? h->cell.processes : 1) + 5;
	if (h->slot_lock < 0)
		l.processes += SHARED_UID_HEADROOM;
	return l;
}

/* Wait for the holder's first record: every phase held, or the one that failed. */
static int await_held(struct host *h, char *err, size_t errlen)
{
	struct pollfd p = { .fd = h->hp.f.status, .events = POLLIN };
	struct ps_status_rec rec;

	if (poll(&p, 1, READY_WAIT_MS) <= 0 ||
	    ps_read_exact(h->hp.f.status, &rec, sizeof(rec)) < 0) {
		snprintf(err, errlen, "the session's holder did not start");
		return -1;
	}
	if (rec.kind != PS_REC_HELD) {
		rec.msg[sizeof(rec.msg) - 1] = '\0';
		snprintf(err, errlen, "worker phase %s: %s", ps_worker_phase_name(rec.phase),
			 rec.msg);
		return -1;
	}
	h->held = rec.held;
	return 0;
}

void ps_host_kill_holder(struct host *h)
{
	ps_host_kill_dying(h);
	if (!h->holder_up)
		return;
	/* every holder and cell stays in the first holder's process group (setsid and
	 * setpgid are not in the filter), and in the PID namespace */
	if (h->holder_pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, h->holder_pidfd, SIGKILL, NULL, 0);
		close(h->holder_pidfd);
	}
	h->holder_pidfd = -1;
	if (h->dying_pidfd >= 0)
		close(h->dying_pidfd);
	h->dying_pidfd = -1;
	ps_host_drop_spare(h);
	/* The first holder is our child and unreaped until the end (settle() leaves it), so
	 * its pid, which is the session's process group, still names only the session. Without
	 * a PID namespace (whose init's end waits for every member) the session's orphans are
	 * ours (PR_SET_CHILD_SUBREAPER): wait for them to be gone, so that their uid's
	 * RLIMIT_NPROC is free for the next session that takes it. */
	for (uint64_t end = ps_now_us() + 2000000;;) {
		kill(-h->group, SIGKILL);
		if (ps_host_reap_others(h->hp.pid) == 0 || (h->w.ns_static & CLONE_NEWPID) ||
		    ps_now_us() >= end)
			break;
		usleep(1000);
	}
	if (h->hp.pid > 0)
		waitpid(h->hp.pid, NULL, 0);
	h->hp.pid = -1;
	ps_worker_cleanup(&h->hp, &h->ho);
	ps_outcome_free(&h->ho);
	h->holder_up = false;
}

int ps_host_spawn_holder(struct host *h, char *err, size_t errlen)
{
	struct ps_limits l = holder_limits(h);
	struct ps_run r = { .code = "", .code_len = 0 };

	r.limits = l;
	ps_host_drop_spare(h);
	if (ps_worker_spawn(&h->w, &l, &r, h->slot, &h->hp, &h->ho) < 0) {
		snprintf(err, errlen, "%s", h->ho.host_error);
		return -1;
	}
	/* the worker's report token is the session's: every record and report carries it */
	memcpy(h->token, h->ho.report_token, sizeof(h->token));
	h->holder_up = true;
	h->holder = h->group = h->hp.pid;
	h->holder_pidfd = h->hp.f.pidfd;
	h->hp.f.pidfd = -1;
	/* every cell shares these channels: never block on one */
	fcntl(h->hp.f.out, F_SETFL, O_NONBLOCK);
	fcntl(h->hp.f.err, F_SETFL, O_NONBLOCK);
	fcntl(h->hp.f.report, F_SETFL, O_NONBLOCK);
	if (await_held(h, err, errlen) < 0) {
		ps_host_kill_holder(h);
		return -1;
	}
	struct ps_host_pid hp;

	if (ps_host_find_child(0, h->holder, &hp) < 0) {
		snprintf(err, errlen, "the session's holder (pid %d) is not in /proc", h->holder);
		ps_host_kill_holder(h);
		return -1;
	}
	h->holder_proc = hp.proc;
	h->count = 0;
	probe_renice(h);
	return 0;
}

/* Where the uid locks live: one directory for the whole host as root (/run/pysnip), so that
 * two fronts with different TMPDIRs never hand one uid to two sessions; else (or where /run
 * is not there) the front's temporary directory. */
static const char *lock_dir(const struct host *h)
{
	static const char run[] = "/run/pysnip";
	struct stat st;

	if (geteuid() != 0)
		return h->w.tmp_base;
	if (mkdir(run, 0700) < 0 && errno != EEXIST)
		return h->w.tmp_base;
	if (lstat(run, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return h->w.tmp_base;	/* not ours as we would have made it */
	return run;
}

/* A uid of the policy's range that no other live session on this host holds: a lock file
 * per uid, held for the session's life. From the top of the range down: serve's one-shot
 * workers take its lowest slots. */
static unsigned pick_slot(struct host *h, int want)
{
	unsigned n = h->p.uid_count > 1 ? h->p.uid_count : 1;
	const char *dir = lock_dir(h);
	char path[300];

	if (want >= 0 || n == 1)
		return want >= 0 ? (unsigned)want : 0;
	for (unsigned s = n; s-- > 0;) {
		snprintf(path, sizeof(path), "%s/pysnip-session-uid-%u.lock", dir, h->p.uid + s);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			h->slot_lock = fd;
			return s;
		}
		close(fd);
	}
	return (unsigned)getpid() % n;	/* every uid taken: share one */
}

/* --- the front's requests --- */

bool ps_host_session_over(struct host *h, uint64_t now)
{
	const struct ps_session_limits *sl = &h->sl;

	if (h->ended[0])
		return true;
	if (sl->idle_ms && now - h->idle_since_us >= sl->idle_ms * 1000)
		snprintf(h->ended, sizeof(h->ended), "idle timeout: no cell for %llu ms",
			 (unsigned long long)sl->idle_ms);
	else if (sl->lifetime_ms && now - h->start_us >= sl->lifetime_ms * 1000)
		snprintf(h->ended, sizeof(h->ended), "lifetime: the session's %llu ms are over",
			 (unsigned long long)sl->lifetime_ms);
	else if (sl->cpu_ms && h->cpu_us >= sl->cpu_ms * 1000)
		snprintf(h->ended, sizeof(h->ended), "cpu: the session's cells used %llu ms of CPU "
			 "(limit %llu ms)", (unsigned long long)(h->cpu_us / 1000),
			 (unsigned long long)sl->cpu_ms);
	else if (sl->cells && h->cells >= sl->cells)
		snprintf(h->ended, sizeof(h->ended), "cells: the session ran its %llu cells",
			 (unsigned long long)sl->cells);
	return h->ended[0] != '\0';
}

static int send_ended(struct host *h)
{
	cJSON *m = cJSON_CreateObject();
	char *line;

	cJSON_AddStringToObject(m, "event", "ended");
	cJSON_AddStringToObject(m, "reason", h->ended);
	line = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (line)
		ps_host_send(h, line);
	free(line);
	return -1;
}

static int send_info(struct host *h, const char *event)
{
	cJSON *m = cJSON_CreateObject();
	char *line;
	int ret;

	cJSON_AddStringToObject(m, "event", event);
	cJSON_AddNumberToObject(m, "execution_count", (double)h->count);
	cJSON_AddNumberToObject(m, "cells", (double)h->cells);
	cJSON_AddNumberToObject(m, "rolled_back", (double)h->rolled_back);
	cJSON_AddNumberToObject(m, "cpu_ms", (double)(h->cpu_us / 1000));
	cJSON_AddBoolToObject(m, "alive", h->holder_up && !h->ended[0]);
	cJSON_AddNumberToObject(m, "uid", h->held.uid);
	cJSON_AddNumberToObject(m, "pid", getpid());
	line = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	ret = line ? ps_host_send(h, line) : -1;
	free(line);
	return ret;
}

static int op_exec(struct host *h, const cJSON *m, bool query)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(m, "code");
	struct ps_cell_req q = { .kind = query ? PS_SCMD_QUERY : PS_SCMD_EXEC };
	char err[512];

	if (!cJSON_IsString(code))
		return send_error(h, "code", "code: missing or not a string");
	q.code = code->valuestring;
	q.len = strlen(code->valuestring);
	if (query) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(m, "kind");
		const cJSON *cur = cJSON_GetObjectItemCaseSensitive(m, "cursor");

		if (!cJSON_IsString(kind) || (strcmp(kind->valuestring, "complete") &&
					      strcmp(kind->valuestring, "inspect") &&
					      strcmp(kind->valuestring, "is_complete")))
			return send_error(h, "kind", "kind: complete, inspect or is_complete");
		q.query = kind->valuestring;
		/* bounded before the cast: a double past SIZE_MAX is UB to convert */
		q.cursor = cJSON_IsNumber(cur) && cur->valuedouble >= 0 &&
			   cur->valuedouble <= (double)q.len ? (size_t)cur->valuedouble : q.len;
	} else if (ps_session_cell_limits(&h->p, &h->cell,
					  cJSON_GetObjectItemCaseSensitive(m, "limits"), &q.limits,
					  err, sizeof(err)) < 0) {
		return send_error(h, "limits", err);
	}
	if (!h->holder_up && ps_host_spawn_holder(h, err, sizeof(err)) < 0) {
		snprintf(h->ended, sizeof(h->ended), "the holder could not be restarted: %s", err);
		return send_ended(h);
	}
	return ps_host_run_cell(h, &q);
}

static int op_restart(struct host *h)
{
	char err[512];

	ps_host_kill_holder(h);
	h->lost[0] = '\0';
	if (ps_host_spawn_holder(h, err, sizeof(err)) < 0) {
		snprintf(h->ended, sizeof(h->ended), "restart: %s", err);
		return send_ended(h);
	}
	return send_info(h, "restarted");
}

/* A session a zygote forked ahead of demand learns its request's limits here, before its
 * first cell: the cells' wall, CPU and output (tightening only) and the session's own.
 * {"op":"configure","limits":{"wall_ms":N,"cpu_ms":N,"output_bytes":N},"session":{"idle_ms":
 * N,"lifetime_ms":N,"cpu_ms":N,"cells":N}} -> {"event":"configured"} */
static int op_configure(struct host *h, const cJSON *m)
{
	static const struct {
		const char *obj, *key;
		size_t off;
		bool cell;
	} keys[] = {
		{ "limits", "wall_ms", offsetof(struct ps_limits, wall_ms), true },
		{ "limits", "cpu_ms", offsetof(struct ps_limits, cpu_ms), true },
		{ "limits", "output_bytes", offsetof(struct ps_limits, output_bytes), true },
		{ "session", "idle_ms", offsetof(struct ps_session_limits, idle_ms), false },
		{ "session", "lifetime_ms", offsetof(struct ps_session_limits, lifetime_ms), false },
		{ "session", "cpu_ms", offsetof(struct ps_session_limits, cpu_ms), false },
		{ "session", "cells", offsetof(struct ps_session_limits, cells), false },
	};

	if (h->cells)
		return send_error(h, "op", "configure: only before the first cell");
	for (size_t i = 0; i < PS_ARRAY_LEN(keys); i++) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(m, keys[i].obj);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i].key);
		uint64_t *slot = (uint64_t *)((char *)(keys[i].cell ? (void *)&h->cell : (void *)&h->sl) +
					      keys[i].off);

		if (!cJSON_IsNumber(v) || v->valuedouble < 0)
			continue;
		/* 2^64 and past (PS_LIMIT_NONE printed as a double) is UB to convert */
		uint64_t n = v->valuedouble >= 18446744073709551616.0 ? UINT64_MAX
								     : (uint64_t)v->valuedouble;
		if (keys[i].cell && *slot && n > *slot)
			return send_error(h, keys[i].key, "configure: looser than the policy's");
		*slot = n;
	}
	h->start_us = h->idle_since_us = ps_now_us();
	return ps_host_send(h, "{\"event\":\"configured\"}");
}

static int handle_line(struct host *h, char *line)
{
	cJSON *m = cJSON_Parse(line);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
	const char *o = cJSON_IsString(op) ? op->valuestring : NULL;
	int ret = 0;

	if (!m)
		ret = send_error(h, NULL, "not a JSON object");
	else if (!o)
		ret = send_error(h, "op", "op: missing or not a string");
	else if (!strcmp(o, "exec"))
		ret = op_exec(h, m, false);
	else if (!strcmp(o, "query"))
		ret = op_exec(h, m, true);
	else if (!strcmp(o, "restart"))
		ret = op_restart(h);
	else if (!strcmp(o, "info"))
		ret = send_info(h, "info");
	else if (!strcmp(o, "configure"))
		ret = op_configure(h, m);
	else if (strcmp(o, "interrupt") && strcmp(o, "input"))	/* late: no cell runs */
		ret = send_error(h, "op", "op: exec, query, restart, info, interrupt or input");
	/* o points into m: decided before m goes */
	if (ret == 0 && strcmp(o ? o : "", "info"))
		h->idle_since_us = ps_now_us();
	cJSON_Delete(m);
	return ret;
}

/* Between cells: the front's next line, the holder's death, the session's limits. */
static void serve_front(struct host *h)
{
	for (;;) {
		bool eof = false;
		char *line;
		uint64_t now = ps_now_us();

		if (ps_host_session_over(h, now)) {
			send_ended(h);
			return;
		}
		while ((line = ps_host_next_line(h, &eof))) {
			int ret = handle_line(h, line);

			free(line);
			if (ret < 0)
				return;
			if (ps_host_session_over(h, ps_now_us())) {
				send_ended(h);
				return;
			}
		}
		if (eof)
			return;
		struct pollfd p[] = {
			{ .fd = FRONT_FD, .events = POLLIN },
			{ .fd = h->holder_up ? h->holder_pidfd : -1, .events = POLLIN },
			{ .fd = h->holder_up ? h->hp.f.status : -1, .events = POLLIN },
		};
		/* a second, or until the deferred kill of a replaced holder is due */
		struct timespec wait = { .tv_sec = 1 };

		if (h->dying_kill_at_us) {
			uint64_t due = h->dying_kill_at_us, t = ps_now_us();

			wait.tv_sec = 0;
			wait.tv_nsec = due > t ? (long)(due - t) * 1000 : 0;
		}
		int n = ppoll(p, 3, &wait, NULL);

		if (h->dying_kill_at_us && ps_now_us() >= h->dying_kill_at_us)
			ps_host_kill_dying(h);

		if (n > 0 && p[2].revents)	/* the next cell, forked ahead */
			ps_host_read_idle_records(h);
		if (n > 0 && p[1].revents) {
			snprintf(h->lost, sizeof(h->lost), "the holder died between cells (after cell "
				 "%llu): this cell ran on a fresh state", (unsigned long long)h->count);
			ps_host_kill_holder(h);
		}
	}
}

/* --- the process --- */

static int parse_args(struct host *h, int argc, char **argv, const char **policy,
		      const char *ov[4], int *slot)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "wall", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "idle", required_argument, NULL, 'I' },
		{ "lifetime", required_argument, NULL, 'L' },
		{ "session-cpu", required_argument, NULL, 'C' },
		{ "cells", required_argument, NULL, 'N' },
		{ "disable-layer", required_argument, NULL, 'd' },
		{ "slot", required_argument, NULL, 's' },
		{ "grace", required_argument, NULL, 'g' },
		{ 0 },
	};
	char err[256];
	int c, l;

	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
		uint64_t *ms = c == 'I' ? &h->sl.idle_ms : c == 'L' ? &h->sl.lifetime_ms :
			       c == 'C' ? &h->sl.cpu_ms : c == 'g' ? &h->grace_ms : NULL;

		if (c == 'p')
			*policy = optarg;
		else if (c == 'w' || c == 'c' || c == 'm' || c == 'o')
			ov[c == 'w' ? 0 : c == 'c' ? 1 : c == 'm' ? 2 : 3] = optarg;
		else if (c == 'N')
			h->sl.cells = strtoull(optarg, NULL, 10);
		else if (c == 's')
			*slot = atoi(optarg);
		else if (c == 'd' && (l = ps_layer_from_name(optarg)) >= 0)
			h->layers_off |= 1u << l;
		else if (ms && ps_parse_duration_ms(optarg, ms, err, sizeof(err)) == 0)
			continue;
		else
			return -1;
	}
	return 0;
}

/* Common to both starts: the session's worker and filter, its uid, its first holder. */
static int begin_session(struct host *h, int slot, const char *shared_scratch, char *err,
			 size_t errlen)
{
	sigaction(SIGINT, NULL, &ps_session_py_sigint);
	signal(SIGINT, SIG_IGN);	/* a terminal's ^C is the front's to turn into an interrupt */
	signal(SIGPIPE, SIG_IGN);
	if (ps_worker_prepare_session(&h->w, &h->p, h->layers_off, ps_session_holder_main, err,
				      errlen) < 0)
		return !strncmp(err, "policy ", 7) ? PS_EXIT_USAGE : PS_EXIT_INTERNAL;
	/* a zygote's child: its interpreter's scratch path is the zygote's shared one */
	if (shared_scratch && shared_scratch[0])
		snprintf(h->w.shared_scratch, sizeof(h->w.shared_scratch), "%s", shared_scratch);
	h->slot = pick_slot(h, slot);
	/* with no PID namespace, orphans of the session come to us, not to the host's init */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (ps_host_spawn_holder(h, err, errlen) < 0)
		return PS_EXIT_INTERNAL;
	return 0;
}

static int start(struct host *h, int argc, char **argv, char *err, size_t errlen)
{
	static const char *const fields[4] = { "wall", "cpu", "memory", "output" };
	const char *policy = "default", *ov[4] = { 0 };
	struct ps_strlist modules = { 0 };
	struct ps_interp_opts io = { 0 };
	int slot = -1;

	if (parse_args(h, argc, argv, &policy, ov, &slot) < 0) {
		snprintf(err, errlen, "usage: bad session-host arguments");
		return PS_EXIT_USAGE;
	}
	if (ps_policy_load(policy, &h->p, err, errlen) < 0)
		return PS_EXIT_USAGE;
	for (int i = 0; i < 4; i++)
		if (ov[i] && ps_policy_override(&h->p, fields[i], ov[i], false, err, errlen) < 0)
			return PS_EXIT_USAGE;
	h->cell = h->p.limits;
	if (ps_policy_modules(&h->p, &modules, err, errlen) < 0)
		return PS_EXIT_USAGE;
	io.policy = &h->p;
	io.modules = &modules;
	io.python_layer = !(h->layers_off & (1u << PS_LAYER_PYTHON)) &&
			  h->p.layers[PS_LAYER_PYTHON] != PS_LAYER_OFF;
	io.preimport = true;
	/* the interpreter once: every restart forks a holder from this state */
	if (ps_interp_init(&io, err, errlen) < 0)
		return PS_EXIT_INTERNAL;
	return begin_session(h, slot, NULL, err, errlen);
}

static void host_init(struct host *h)
{
	memset(h, 0, sizeof(*h));
	h->slot_lock = -1;
	h->holder_pidfd = -1;
	h->dying_pidfd = -1;
	h->spare_pidfd = -1;
	h->grace_ms = DEFAULT_GRACE_MS;
	h->start_us = h->idle_since_us = ps_now_us();
	if (sched_getaffinity(0, sizeof(h->cpus), &h->cpus) < 0)
		CPU_ZERO(&h->cpus);	/* no pinning (ps_host_pin) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* our parent's death ends the session */
}

/* Say how the start went, serve the front, and leave nothing. */
static int host_run(struct host *h, int ret, const char *err)
{
	if (ret) {
		cJSON *m = cJSON_CreateObject();
		char *line;

		cJSON_AddStringToObject(m, "event", "error");
		cJSON_AddStringToObject(m, "message", err);
		cJSON_AddBoolToObject(m, "usage", ret == PS_EXIT_USAGE);
		line = cJSON_PrintUnformatted(m);
		cJSON_Delete(m);
		if (line)
			ps_host_send(h, line);
		free(line);
	} else {
		send_info(h, "ready");
		serve_front(h);
	}
	ps_host_kill_holder(h);
	ps_worker_release(&h->w);	/* the PID namespace's init, and with it every survivor */
	if (h->slot_lock >= 0)
		close(h->slot_lock);
	return ret;
}

int ps_session_host_run(const struct ps_policy *p, uint32_t layers_off, const char *shared_scratch,
			const struct ps_limits *cell, const struct ps_session_limits *sl, int slot)
{
	static struct host h;	/* one a process */
	char err[512] = "";

	host_init(&h);
	h.p = *p;
	h.layers_off = layers_off;
	h.cell = *cell;
	h.sl = *sl;
	return host_run(&h, begin_session(&h, slot, shared_scratch, err, sizeof(err)), err);
}

int ps_cmd_session_host(int argc, char **argv)
{
	static struct host h;	/* one a process */
	char err[512] = "";

	host_init(&h);
	return host_run(&h, start(&h, argc, argv, err, sizeof(err)), err);
}
