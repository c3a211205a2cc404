/* Policies: named JSON files under policies/, one level of "extends".
 * Loaded and validated in the parent before anything forks. */
#ifndef PS_POLICY_H
#define PS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ps_strlist {
	char **items;
	size_t n;
};

/* PID_MAX_LIMIT: every pid a worker can have, so the span of a per-process uid range. */
#define PS_UID_PER_PROCESS_SPAN 4194304u

/* A limit the host sets to "none" for one of its own processes (a session holder's CPU:
 * each cell gets its own). Never a policy's or a request's value: 0 is the tightest there. */
#define PS_LIMIT_NONE UINT64_MAX

struct ps_limits {
	uint64_t wall_ms;	/* wall clock for the whole run */
	uint64_t cpu_ms;	/* RLIMIT_CPU (rounded up to whole seconds); PS_LIMIT_NONE: none */
	uint64_t memory_bytes;	/* RLIMIT_AS and RLIMIT_DATA */
	uint64_t output_bytes;	/* stdout + stderr, each capped separately */
	uint64_t file_size_bytes; /* RLIMIT_FSIZE */
	uint64_t open_files;	/* RLIMIT_NOFILE */
	uint64_t processes;	/* threads (RLIMIT_NPROC under a private uid, seccomp otherwise) */
	uint64_t scratch_bytes;	/* size cap of the per-run scratch directory */
	uint64_t cpus_milli;	/* CPU share in thousandths of a CPU (cgroup cpu.max); 0: one CPU */
	uint64_t output_files;	/* files the run may leave in output/ */
	uint64_t output_files_bytes; /* their total size */
};

enum ps_seccomp_action {
	PS_SECCOMP_KILL,	 /* trap, report the syscall, die by SIGSYS */
	PS_SECCOMP_KILL_PROCESS, /* the kernel kills at once; the syscall is not named */
	PS_SECCOMP_ERRNO,	 /* fail the call with seccomp_errno (tests) */
};

/* A layer is required (fail closed), best-effort, or off. */
enum ps_layer_mode {
	PS_LAYER_REQUIRED,
	PS_LAYER_BEST_EFFORT,
	PS_LAYER_OFF,
};

enum ps_layer {
	PS_LAYER_PYTHON,
	PS_LAYER_IDENTITY,
	PS_LAYER_LANDLOCK,
	PS_LAYER_SECCOMP,
	PS_LAYER_NAMESPACES,
	PS_LAYER_CGROUP,
	PS_LAYER_COUNT,
};

struct ps_seccomp_profile;

/* pysnip learn: how the filter reports what it does not allow. */
enum ps_learn_via {
	PS_LEARN_OFF,
	PS_LEARN_NOTIFY,	/* SECCOMP_RET_USER_NOTIF, answered by a supervisor */
	PS_LEARN_LOG,		/* SECCOMP_RET_LOG: allowed, and the kernel's audit records say */
};

struct ps_policy {
	char *name;		/* "default", or the file's stem */
	char *path;		/* the file it was loaded from */
	char *extends;		/* name of the parent, or NULL */
	struct ps_limits limits;

	/* modules: allowlist files (stdlib-allow/NAME.txt) and extra names */
	struct ps_strlist module_lists;	/* names of stdlib-allow files */
	struct ps_strlist modules_allow;	/* extra module names allowed */
	struct ps_strlist modules_deny;	/* removed even if a list allows them */
	struct ps_strlist python_paths;	/* extra sys.path entries (read-only) */
	/* modules the stdlib and the policy's paths may load although the snippet may not import
	 * them, dangerous ones included (pandas imports subprocess, ctypes, mmap and socket at
	 * import time): their audit events stay denied */
	struct ps_strlist modules_internal;

	struct ps_strlist read_paths;	/* readable besides the stdlib */
	struct ps_strlist write_paths;	/* writable besides scratch */
	bool network;			/* must be false: nothing grants it yet */

	struct ps_strlist audit_allow;	/* audit events granted despite the defaults */

	enum ps_seccomp_action seccomp_action;
	int seccomp_errno;		/* for PS_SECCOMP_ERRNO */
	struct ps_strlist syscall_groups;	/* "@python-runtime", ... */
	struct ps_strlist syscalls_allow;	/* extra syscall names */
	bool threads;			/* clone(CLONE_THREAD) allowed */
	/* "seccomp.profile": a Docker/OCI profile in place of the groups (seccomp_profile.h) */
	char *seccomp_profile_path;
	struct ps_seccomp_profile *seccomp_profile;
	int8_t groups_level, allow_level, profile_level;	/* which file set them (ps_pctx) */
	uint8_t seccomp_learn;		/* pysnip learn (never from a file): enum ps_learn_via */

	uint32_t uid, gid;		/* identity when started as root */
	uint32_t uid_count;		/* >1: a range uid..uid+count-1, one per worker slot */
	/* uid_count "per-process": every worker runs as uid + P and gid + P, P its pid, so no
	 * two live workers on the host share a uid (exec, serve, every policy and server);
	 * uid_count is then PS_UID_PER_PROCESS_SPAN */
	bool uid_per_process;
	char *cgroup_parent;		/* delegated cgroup v2 directory, or NULL */

	enum ps_layer_mode layers[PS_LAYER_COUNT];
	char *description;		/* free text, or NULL */
};

/* Where policies/ and stdlib-allow/ live (next to the binary by default). */
const char *ps_policy_dir(void);
const char *ps_allow_dir(void);
/* matplotlib's font list, built once by make (mpl-cache/fontlist-v*.json): copied into each
 * run's MPLCONFIGDIR, so that no run spends a second rebuilding it. */
const char *ps_mpl_cache_dir(void);

/* Load NAME (a policies/NAME.json) or PATH (contains '/' or ends in .json).
 * On error returns -1 and writes "policy FILE: field X: reason" into err. */
int ps_policy_load(const char *name_or_path, struct ps_policy *out, char *err, size_t errlen);
void ps_policy_free(struct ps_policy *p);

/* The resolved policy as JSON text (caller frees), for check-policy and the verdict's "limits". */
char *ps_policy_to_json(const struct ps_policy *p, bool pretty);

/* The limits alone as machine numbers, for the verdict: {"wall_ms":..,"cpu_ms":..,
 * "memory_bytes":..,"output_bytes":..,"file_size_bytes":..,"open_files":..,"processes":..,
 * "scratch_bytes":..}, a cJSON object (caller deletes); NULL on allocation failure. */
struct cJSON;
struct cJSON *ps_limits_to_cjson(const struct ps_limits *l);

/* A CLI or request override of one limit ("wall", "cpu", "memory", "output", also "file_size"
 * and "scratch"; a "limits." prefix is allowed) in human units. With tighten_only, a value
 * looser than the policy's is an error ("limits.wall: 10s is looser than the policy's 5s").
 * 0, or -1 with the reason in err. */
int ps_policy_override(struct ps_policy *p, const char *field, const char *value,
		       bool tighten_only, char *err, size_t errlen);

/* Read stdlib-allow lists named by the policy, plus modules_allow, minus modules_deny.
 * Returns -1 with a message naming the file and line on error. */
int ps_policy_modules(const struct ps_policy *p, struct ps_strlist *out, char *err, size_t errlen);

const char *ps_layer_name(enum ps_layer l);
int ps_layer_from_name(const char *name);	/* -1 if unknown */
const char *ps_seccomp_action_name(enum ps_seccomp_action a);
const char *ps_layer_mode_name(enum ps_layer_mode m);
/* "EPERM" for EPERM; NULL for a number the table does not name. */
const char *ps_errno_name(int e);


/* "os.path": dotted Python identifiers (ASCII). */
bool ps_module_name_valid(const char *s);
/* "default", "my-policy_2": what may name a policy or a stdlib-allow list. */
bool ps_policy_name_valid(const char *s);

void ps_strlist_free(struct ps_strlist *l);
int ps_strlist_push(struct ps_strlist *l, const char *s);
bool ps_strlist_has(const struct ps_strlist *l, const char *s);

#endif
