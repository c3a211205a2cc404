/* `pysnip serve`: load the served policies, listen, start a zygote per policy, serve until
 * SIGTERM/SIGINT, then drain (stop accepting, finish what runs) and exit 0.
 * A monitor thread is the only one that reaps children: it restarts a zygote that died. */
#include <crypt.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "serve/pool.h"
#include "serve/server.h"
#include "util/util.h"
#include "zygote/zygote.h"

enum {
	DEFAULT_QUEUE = 64,
	MAX_POLICIES = 16,
	MAX_CONNS = 4096,		/* a thread each */
	MAX_UNTRUSTED = 256,		/* of them, not yet past the token check */
	HEADER_TIMEOUT_MS = 10000,	/* default --header-timeout */
	FDS_OWN = 64,			/* the front's own descriptors, with slack */
};

static const char *const default_policies[] = { "default", "strict", "notebook" };

struct serve {
	struct ps_policy policies[MAX_POLICIES];
	struct ps_zygote zygotes[MAX_POLICIES];
	size_t n;
	char tmp_root[200];
	char unix_path[108];
	int stopping;		/* atomic: serve() is ending the zygotes */
};

/* ---------------------------------------------------------------- listening socket */

static int listen_unix(struct serve *sv, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		ps_err("--listen unix:%s: path longer than %zu bytes", path, sizeof(a.sun_path) - 1);
		return -1;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);	/* a stale socket from an earlier run */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ps_err("socket(AF_UNIX): %s", strerror(errno));
		return -1;
	}
	old = umask(0177);	/* owner-only from birth: no window with looser perms */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		umask(old);
		ps_err("--listen unix:%s: bind: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	chmod(path, 0600);
	snprintf(sv->unix_path, sizeof(sv->unix_path), "%s", path);
	return fd;
}

static int listen_tcp(const char *spec)
{
	char host[256], *colon;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res;
	int fd, one = 1, ret;

	snprintf(host, sizeof(host), "%s", spec);
	colon = strrchr(host, ':');
	if (!colon || !colon[1]) {
		ps_err("--listen %s: expected HOST:PORT or unix:/path", spec);
		return -1;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {	/* [::1]:8080 */
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	ret = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
	if (ret) {
		ps_err("--listen %s: %s", spec, gai_strerror(ret));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
		ps_err("--listen %s: bind: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Bound and listening; prints where, so a caller that asked for port 0 learns the port. */
static int open_listener(struct serve *sv, const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[128], port[16];
	int fd = !strncmp(spec, "unix:", 5) ? listen_unix(sv, spec + 5) : listen_tcp(spec);

	if (fd < 0)
		return -1;
	if (listen(fd, 1024) < 0) {
		ps_err("listen(%s): %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	if (sv->unix_path[0]) {
		fprintf(stderr, "pysnip serve: listening on unix:%s\n", sv->unix_path);
	} else if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
		   getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
			       NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
		fprintf(stderr, "pysnip serve: listening on http://%s%s%s:%s\n",
			strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
	}
	return fd;
}

/* ---------------------------------------------------------------- policies, zygotes */

static int load_policies(struct serve *sv, const char *list)
{
	char buf[1024], *save = NULL, err[512];

	if (list) {
		snprintf(buf, sizeof(buf), "%s", list);
	} else {
		buf[0] = '\0';
		for (size_t i = 0; i < PS_ARRAY_LEN(default_policies); i++) {
			char path[512];

			snprintf(path, sizeof(path), "%s/%s.json", ps_policy_dir(), default_policies[i]);
			if (access(path, R_OK) == 0)
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
					 buf[0] ? "," : "", default_policies[i]);
		}
	}
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (sv->n == MAX_POLICIES) {
			ps_err("--policy: at most %d policies", MAX_POLICIES);
			return -1;
		}
		if (ps_policy_load(tok, &sv->policies[sv->n], err, sizeof(err)) < 0) {
			ps_err("%s", err);
			return -1;
		}
		for (size_t i = 0; i < sv->n; i++) {
			if (!strcmp(sv->policies[i].name, sv->policies[sv->n].name)) {
				ps_err("--policy: '%s' named twice", sv->policies[i].name);
				return -1;
			}
		}
		sv->n++;
	}
	if (!sv->n) {
		ps_err("--policy: no policy to serve");
		return -1;
	}
	return 0;
}

static int start_zygotes(struct serve *sv, const struct ps_opts *o, unsigned spare)
{
	char err[1024];

	for (size_t i = 0; i < sv->n; i++) {
		ps_zygote_init(&sv->zygotes[i], sv->policies[i].path ? sv->policies[i].path
								    : sv->policies[i].name,
			       sv->policies[i].name, sv->tmp_root, o->layers_off, spare);
		if (ps_zygote_start(&sv->zygotes[i], err, sizeof(err)) < 0) {
			ps_err("%s", err);
			return -1;
		}
	}
	return 0;
}

/* The only reaper of our children: a zygote that died is restarted (unless stopping). */
static void *monitor(void *arg)
{
	struct serve *sv = arg;
	char err[1024];

	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, 0);
		struct ps_zygote *z = NULL;

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (__atomic_load_n(&sv->stopping, __ATOMIC_SEQ_CST))
				return NULL;
			usleep(50000);	/* no child right now (a restart failed) */
		}
		for (size_t i = 0; pid > 0 && i < sv->n; i++)
			if (sv->zygotes[i].pid == pid)
				z = &sv->zygotes[i];
		if (z)
			ps_zygote_reaped(z);
		if (__atomic_load_n(&sv->stopping, __ATOMIC_SEQ_CST))
			continue;
		for (size_t i = 0; i < sv->n; i++) {
			z = &sv->zygotes[i];
			if (z->pid > 0)
				continue;
			__atomic_add_fetch(&z->restarts, 1, __ATOMIC_RELAXED);
			ps_err("zygote %s ended; restarting", z->name);
			if (ps_zygote_start(z, err, sizeof(err)) < 0) {
				ps_err("restarting zygote %s: %s", z->name, err);
				sleep(1);
			}
			/* serve() may have killed the zygotes while this one was starting (its pid
			 * was not set yet): then it is ours to end, else waitpid() never returns */
			if (__atomic_load_n(&sv->stopping, __ATOMIC_SEQ_CST))
				ps_zygote_kill(z);
		}
	}
}

static int read_token(const char *path, char **token)
{
	size_t len;
	int ret = ps_read_file(path, token, &len);

	if (ret < 0) {
		ps_err("--token-file %s: %s", path, strerror(-ret));
		return -1;
	}
	while (len && strchr(" \t\r\n", (*token)[len - 1]))
		(*token)[--len] = '\0';
	if (!len) {
		ps_err("--token-file %s: empty", path);
		return -1;
	}
	/* The token is compared as a C string: a NUL would silently shorten it (and what could
	 * not be sent in a header line could never match). One line of visible ASCII. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)(*token)[i];

		if (c < 0x21 || c > 0x7e) {
			ps_err("--token-file %s: byte %zu is 0x%02x; a token is one line of visible "
			       "ASCII characters", path, i, c);
			return -1;
		}
	}
	return 0;
}

static int make_tmp_root(struct serve *sv, const struct ps_opts *o)
{
	snprintf(sv->tmp_root, sizeof(sv->tmp_root), "%s/pysnip-serve-XXXXXX",
		 ps_scratch_base(!(o->layers_off & (1u << PS_LAYER_NAMESPACES))));
	if (!mkdtemp(sv->tmp_root) || chmod(sv->tmp_root, 0711) < 0) {
		ps_err("mkdtemp(%s): %s", sv->tmp_root, strerror(errno));
		return -1;
	}
	return 0;
}

/* Descriptors: the soft NOFILE limit raised to the hard one (the usual soft 1024 is a
 * compatibility default for select(); we poll), then a budget that keeps what the pools need
 * out of the connections' reach. A zygote's pool holds workers + 1 idle spares (and its
 * rehearsed ones, counted whether or not this host lets it keep them) and a worker per
 * running run, each with PS_ZWORKER_FDS channels, plus one tagged worker forked for a
 * request (a tighter scratch): past what is left, connections are refused with a 503 rather
 * than starve the pool (a worker whose channels cannot be received is lost; see pool.c). */
static unsigned connection_budget(const struct serve *sv, unsigned workers)
{
	struct rlimit rl;
	uint64_t pools = 0;
	uint64_t have;

	for (size_t i = 0; i < sv->n; i++)
		pools += (2u * workers + 2u + ps_zygote_rehearsed_spares(&sv->policies[i],
									 workers + 1)) *
			 PS_ZWORKER_FDS;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		/* an unlimited hard limit is not a value NOFILE takes: the kernel's default
		 * fs.nr_open is */
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? 1u << 20 : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			ps_err("setrlimit(RLIMIT_NOFILE, %llu): %s", (unsigned long long)rl.rlim_max,
			       strerror(errno));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return MAX_CONNS;
	have = rl.rlim_cur;
	if (have < pools + FDS_OWN + 16) {
		ps_err("RLIMIT_NOFILE %llu leaves only 16 connections (the zygotes' pools need %llu)",
		       (unsigned long long)have, (unsigned long long)pools);
		return 16;
	}
	return have - pools - FDS_OWN > MAX_CONNS ? MAX_CONNS : (unsigned)(have - pools - FDS_OWN);
}

static int serve(struct serve *sv, const struct ps_opts *o, struct ps_server_config *cfg)
{
	struct ps_server *s = NULL;
	pthread_t mon;
	sigset_t stop;
	char err[512];
	int sig;

	/* workers + 1 spares per zygote: one is forked ahead even when every worker runs its policy. */
	if (start_zygotes(sv, o, cfg->workers + 1) < 0)
		return PS_EXIT_INTERNAL;
	if (pthread_create(&mon, NULL, monitor, sv)) {
		ps_err("pthread_create(monitor): failed");
		return PS_EXIT_INTERNAL;
	}
	if (ps_server_start(cfg, &s, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		return PS_EXIT_INTERNAL;
	}
	fprintf(stderr, "pysnip serve: ready (policies:");
	for (size_t i = 0; i < sv->n; i++)
		fprintf(stderr, " %s", sv->policies[i].name);
	fprintf(stderr, "; workers %u, queue %u)\n", cfg->workers, cfg->queue);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigwait(&stop, &sig);
	fprintf(stderr, "pysnip serve: %s, draining\n", strsignal(sig));
	ps_server_drain(s);
	ps_server_free(s);
	__atomic_store_n(&sv->stopping, 1, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < sv->n; i++)
		ps_zygote_kill(&sv->zygotes[i]);
	pthread_join(mon, NULL);
	fprintf(stderr, "pysnip serve: stopped\n");
	return PS_EXIT_OK;
}

/* The token's id in the audit log: a one-way digest (SHA-256-crypt, fixed salt), its first
 * 16 characters, so that lines say which token was used and the log never holds it. */
static void token_id(const char *token, char *out, size_t len)
{
	struct crypt_data cd;
	const char *h;

	memset(&cd, 0, sizeof(cd));
	h = crypt_r(token, "$5$rounds=5000$pysnip-token-id$", &cd);
	h = h && h[0] == '$' ? strrchr(h, '$') : NULL;
	snprintf(out, len, "sha256crypt:%.16s", h ? h + 1 : "unavailable");
}

int ps_cmd_serve(int argc, char **argv)
{
	static struct serve sv;
	struct ps_server_config cfg = { 0 };
	struct ps_opts o;
	char *token = NULL, tid[48], err[512];
	sigset_t block;
	int ret = PS_EXIT_USAGE, werr;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (ps_cli_parse(PS_CMD_SERVE, argc, argv, &o) < 0)
		return PS_EXIT_USAGE;
	if (o.help) {
		ps_cli_usage(PS_CMD_SERVE, stdout);
		return PS_EXIT_OK;
	}
	/* ps_cli_parse defaults --policy to "default"; serve's default is every standard policy. */
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "--policy", 8))
			cfg.n = 1;
	if (load_policies(&sv, cfg.n ? o.policy : NULL) < 0 ||
	    (o.token_file && read_token(o.token_file, &token) < 0))
		goto out;
	if (o.audit_log && ps_auditlog_open(o.audit_log, &cfg.audit, err, sizeof(err)) < 0) {
		ps_err("%s", err);
		goto out;
	}
	if (cfg.audit && (werr = ps_auditlog_start_writer(cfg.audit)) < 0) {
		ps_err("audit log %s: its writer thread: %s", o.audit_log, strerror(-werr));
		ret = PS_EXIT_INTERNAL;
		goto out;
	}
	if (token) {
		token_id(token, tid, sizeof(tid));
		cfg.token_id = tid;
	}
	/* Signals: SIGTERM/SIGINT go to sigwait() in the main thread; block them before any
	 * thread exists so every thread inherits the mask. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	signal(SIGPIPE, SIG_IGN);
	cfg.workers = (unsigned)(o.workers > 0 ? o.workers : (cores > 0 ? cores : 1));
	cfg.queue = (unsigned)(o.queue > 0 ? o.queue : DEFAULT_QUEUE);
	cfg.max_sessions = (unsigned)(o.max_sessions > 0 ? o.max_sessions : 0);
	cfg.token = token;
	cfg.body_max = PS_SERVE_BODY_MAX;
	cfg.max_conns = connection_budget(&sv, cfg.workers);
	cfg.max_untrusted = cfg.max_conns / 2 < MAX_UNTRUSTED ? cfg.max_conns / 2 : MAX_UNTRUSTED;
	cfg.untrusted_ms = HEADER_TIMEOUT_MS;
	if (o.header_timeout) {
		uint64_t ms = 0;
		char why[256];

		if (ps_parse_duration_ms(o.header_timeout, &ms, why, sizeof(why)) < 0 || !ms ||
		    ms > 3600 * 1000) {
			ps_err("--header-timeout %s: %s", o.header_timeout,
			       ms ? why : "must be a duration between 1ms and 1h, e.g. 10s");
			goto out;
		}
		cfg.untrusted_ms = (unsigned)ms;
	}
	cfg.policies = sv.policies;
	cfg.zygotes = sv.zygotes;
	cfg.n = sv.n;
	if (make_tmp_root(&sv, &o) < 0) {
		ret = PS_EXIT_INTERNAL;
		goto out;
	}
	cfg.listen_fd = open_listener(&sv, o.listen ? o.listen : "127.0.0.1:8080");
	if (cfg.listen_fd < 0)
		goto out_tmp;
	ret = serve(&sv, &o, &cfg);
	if (ret != PS_EXIT_OK) {
		__atomic_store_n(&sv.stopping, 1, __ATOMIC_SEQ_CST);
		for (size_t i = 0; i < sv.n; i++)
			ps_zygote_kill(&sv.zygotes[i]);
	}
	if (sv.unix_path[0])
		unlink(sv.unix_path);
out_tmp:
	ps_rmtree(sv.tmp_root);
out:
	for (size_t i = 0; i < sv.n; i++)
		ps_policy_free(&sv.policies[i]);
	free(token);
	ps_auditlog_close(cfg.audit);
	return ret;
}
