/* The verdict (host/run/result.c, ps_verdict_render) from what a supervisor could see: the
 * worker's report channel (untrusted: the snippet shares the worker's process), its stdout and
 * stderr (any bytes), and how the kernel says it ended. The verdict must be UTF-8 JSON that
 * cJSON parses (with \udcXX read back as bytes), one object with a known status, and the
 * status must not contradict the kernel: a wall-clock kill is a timeout, a SIGSYS a denial,
 * "ok" only a normal exit. Text on the channel that is not behind the run's token must count
 * for nothing: no exception, no denial of the snippet's making.
 *
 * Input: 4 control bytes (how it ended, flags), 2 bytes of lengths, then stdout, stderr and
 * the report channel's bytes. */
#include <cjson/cJSON.h>
#include <signal.h>

#include "fuzz.h"
#include "run/result.h"
#include "util/util.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static struct ps_policy policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	policy.name = "fuzz";
	return 0;
}

static const int signals[] = { SIGKILL, SIGSYS, SIGSEGV, SIGXCPU, SIGABRT, SIGBUS, SIGTERM, 0 };

static void outcome_from(const uint8_t *c, struct ps_outcome *o, bool *tokened)
{
	int sig = signals[c[0] % PS_ARRAY_LEN(signals)];

	memset(o, 0, sizeof(*o));
	o->reaped = !(c[1] & 0x80);
	o->wait_status = sig ? sig : (c[0] >> 3) << 8;	/* WIFSIGNALED, or exit code */
	o->timed_out = c[1] & 1;
	o->output_capped = c[1] & 2;
	o->report_capped = c[1] & 4;
	o->have_syscall = c[1] & 8;
	o->syscall_nr = (int)c[2] - 16;
	o->syscall_arch = c[1] & 0x10 ? 0x40000003u /* i386 */ : 0xc000003eu /* x86_64 */;
	o->held.landlock_abi = c[1] & 0x20 ? 3 : 0;
	o->cgroup_oom_kills = c[1] & 0x40 ? 1 : 0;
	o->ru.ru_utime.tv_sec = c[2] & 7;
	o->ru.ru_maxrss = (long)c[3] << 12;
	o->wall_us = (uint64_t)c[3] * 1000;
	if (c[3] & 1)
		snprintf(o->phase_name, sizeof(o->phase_name), "seccomp");
	o->phase_failed = (c[3] & 3) == 3;
	/* every phase held, the filter among them (a SIGSYS is a denial only then) */
	o->have_held = c[3] & 4;
	o->held.seccomp = c[3] & 8 ? 1 : 0;
	snprintf(o->report_token, sizeof(o->report_token), TOKEN);
	*tokened = c[2] & 0x80;
}

static const char *str(const cJSON *v, const char *key)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, key);

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

static void check_verdict(const char *text, const struct ps_outcome *o, bool tokened)
{
	static const char *const known[] = { "ok", "exception", "denied", "timeout", "cpu_limit",
					     "memory_limit", "output_limit", "signal",
					     "internal_error" };
	size_t len = strlen(text), rawlen;
	char *raw;
	cJSON *v, *d;
	const char *st;
	bool found = false;

	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)text, len), "verdict not UTF-8: %s",
		   text);
	raw = fuzz_unescape_surrogates(text, len, &rawlen);
	v = cJSON_ParseWithLength(raw, rawlen);
	FUZZ_CHECK(cJSON_IsObject(v), "verdict is no JSON object: %s", text);
	st = str(v, "status");
	for (size_t i = 0; st && i < PS_ARRAY_LEN(known); i++)
		found |= !strcmp(st, known[i]);
	FUZZ_CHECK(found, "unknown status in %s", text);
	if (o->reaped && !o->phase_failed && o->timed_out)
		FUZZ_CHECK(!strcmp(st, "timeout"), "a wall-clock kill reported as %s", st);
	if (o->reaped && !o->phase_failed && !o->timed_out && !o->output_capped &&
	    !o->report_capped && WIFSIGNALED(o->wait_status) && WTERMSIG(o->wait_status) == SIGSYS &&
	    o->have_held && o->held.seccomp)
		FUZZ_CHECK(!strcmp(st, "denied"), "a SIGSYS under a loaded filter reported as %s", st);
	if (!strcmp(st, "ok"))
		FUZZ_CHECK(o->reaped && WIFEXITED(o->wait_status), "ok for a worker that did not "
			   "exit normally: %s", text);
	if (!tokened) {
		FUZZ_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(v, "exception")),
			   "an exception from text not behind the token: %s", text);
		cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(v, "denials")) {
			const char *layer = str(d, "layer");

			FUZZ_CHECK(layer && (!strcmp(layer, "seccomp") || !strcmp(layer, "landlock")),
				   "a denial from text not behind the token: %s", text);
		}
	}
	cJSON_Delete(v);
	free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_outcome o;
	struct ps_run r = { .code = "", .limits = { .wall_ms = 5000, .cpu_ms = 2000,
						    .memory_bytes = 256 << 20 } };
	size_t rest, nout, nerr, nrep;
	bool tokened;
	char *verdict, *rep;

	if (size < 6)
		return 0;
	outcome_from(data, &o, &tokened);
	rest = size - 6;
	nout = data[4] % (rest + 1);
	nerr = data[5] % (rest - nout + 1);
	nrep = rest - nout - nerr;
	o.out.buf = (char *)data + 6;
	o.out.len = nout;
	o.err.buf = (char *)data + 6 + nout;
	o.err.len = nerr;
	/* The shim's report: the token, a newline, the JSON (here, whatever the input says). */
	rep = malloc(sizeof(TOKEN) + nrep + 1);
	FUZZ_CHECK(rep, "out of memory");
	if (tokened)
		memcpy(rep, TOKEN "\n", sizeof(TOKEN));
	memcpy(rep + (tokened ? sizeof(TOKEN) : 0), data + 6 + nout + nerr, nrep);
	o.report.buf = rep;
	o.report.len = nrep + (tokened ? sizeof(TOKEN) : 0);
	/* The input may spell the token itself (libFuzzer finds it by its comparisons). */
	tokened |= memmem(rep, o.report.len, TOKEN, sizeof(TOKEN) - 1) != NULL;
	verdict = ps_verdict_render(&policy, &r, &o, data[0] & 4);
	FUZZ_CHECK(verdict, "ps_verdict_render returned NULL");
	check_verdict(verdict, &o, tokened);
	free(verdict);
	free(rep);
	return 0;
}
