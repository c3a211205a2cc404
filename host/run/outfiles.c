/* The files a run left in output/, as its report carries them (pyshim/files.py): the parent
 * trusts nothing of it. Every name is checked again (relative, no "..", no empty or dot
 * component, bounded), every file decoded, the count and total bytes capped by the run's
 * limits, each digest computed here; what fails is refused by name. Written out only below
 * the caller's directory, through descriptors, never following a symlink. */
#include "outfiles.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/codec.h"
#include "util/util.h"

enum { NAME_MAX_LEN = 1024, COMPONENT_MAX = 255, DEPTH_MAX = 8, REFUSED_MAX = 64 };

const char *ps_outfile_name_problem(const char *path)
{
	size_t depth = 0;

	if (!*path)
		return "an empty name";
	if (strlen(path) > NAME_MAX_LEN)
		return "a name longer than 1024 bytes";
	if (path[0] == '/')
		return "an absolute name";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 0)
			return "an empty component";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "a '.' or '..' component";
		if (n > COMPONENT_MAX)
			return "a component longer than 255 bytes";
		if (++depth > DEPTH_MAX + 1)
			return "deeper than 8 directories";
		p += n;
		if (*p == '/' && !*++p)
			return "an empty component";	/* "a/": no file name */
	}
	return NULL;
}

static int refuse(struct ps_outfiles *o, const char *path, const char *reason)
{
	struct ps_outfile_refused *r;

	if (o->n_refused >= REFUSED_MAX) {
		o->refused_omitted++;
		return 0;
	}
	r = &o->refused[o->n_refused];
	snprintf(r->path, sizeof(r->path), "%s", path ? path : "");
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	o->n_refused++;
	return 0;
}

static bool seen(const struct ps_outfiles *o, const char *path)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->files[i].path, path))
			return true;
	return false;
}

int ps_outfiles_take(const struct cJSON *report, const struct ps_limits *l,
		     struct ps_outfiles *o)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(report, "files");
	const cJSON *refused = cJSON_GetObjectItemCaseSensitive(report, "files_refused");
	const cJSON *omitted = cJSON_GetObjectItemCaseSensitive(report, "files_refused_omitted");
	const cJSON *e;
	size_t max = (size_t)cJSON_GetArraySize(files);

	memset(o, 0, sizeof(*o));
	o->files = calloc(max ? max : 1, sizeof(*o->files));
	o->refused = calloc(REFUSED_MAX, sizeof(*o->refused));
	if (!o->files || !o->refused)
		return -ENOMEM;
	cJSON_ArrayForEach(e, refused) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "reason");

		refuse(o, cJSON_IsString(p) ? p->valuestring : "?",
		       cJSON_IsString(r) ? r->valuestring : "refused");
	}
	if (cJSON_IsNumber(omitted) && omitted->valuedouble > 0 && omitted->valuedouble < 1e9)
		o->refused_omitted += (size_t)omitted->valuedouble;
	cJSON_ArrayForEach(e, files) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data");
		const char *path = cJSON_IsString(p) ? p->valuestring : NULL;
		const char *why = path ? ps_outfile_name_problem(path) : "no name";
		struct ps_outfile *f = &o->files[o->n];
		size_t dlen = cJSON_IsString(d) ? strlen(d->valuestring) : 0;
		long n;

		if (!why && !cJSON_IsString(d))
			why = "no content";
		if (!why && seen(o, path))
			why = "a second file of that name";
		if (!why && o->n >= l->output_files)
			why = "over the limit on output files";
		if (!why && o->bytes + dlen / 4 * 3 > l->output_files_bytes + 2)
			why = "over the limit on output bytes";
		if (why) {
			refuse(o, path, why);
			continue;
		}
		f->data = malloc(dlen / 4 * 3 + 1);
		if (!f->data)
			return -ENOMEM;
		n = ps_base64_decode(d->valuestring, dlen, f->data);
		if (n < 0 || o->bytes + (uint64_t)n > l->output_files_bytes) {
			free(f->data);
			f->data = NULL;
			refuse(o, path, n < 0 ? "content is not base64" : "over the limit on output bytes");
			continue;
		}
		f->len = (size_t)n;
		f->path = strdup(path);
		if (!f->path) {
			free(f->data);
			f->data = NULL;
			return -ENOMEM;
		}
		ps_sha256_hex(f->data, f->len, f->sha256);
		o->bytes += f->len;
		o->n++;
	}
	return 0;
}

struct cJSON *ps_outfiles_json(const struct ps_outfiles *o, bool content)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < o->n; i++) {
		const struct ps_outfile *f = &o->files[i];
		cJSON *j = cJSON_CreateObject();

		if (!j)
			break;
		cJSON_AddStringToObject(j, "path", f->path);
		cJSON_AddNumberToObject(j, "size", (double)f->len);
		cJSON_AddStringToObject(j, "sha256", f->sha256);
		if (content) {
			char *b = malloc(ps_base64_encoded_len(f->len) + 1);

			if (b) {
				ps_base64_encode(f->data, f->len, b);
				cJSON_AddStringToObject(j, "content", b);
				free(b);
			}
		}
		cJSON_AddItemToArray(a, j);
	}
	return a;
}

struct cJSON *ps_outfiles_refused_json(const struct ps_outfiles *o)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < o->n_refused; i++) {
		cJSON *j = cJSON_CreateObject();

		if (!j)
			break;
		cJSON_AddStringToObject(j, "path", o->refused[i].path);
		cJSON_AddStringToObject(j, "reason", o->refused[i].reason);
		cJSON_AddItemToArray(a, j);
	}
	if (a && o->refused_omitted) {
		cJSON *j = cJSON_CreateObject();
		char why[64];

		snprintf(why, sizeof(why), "%zu more refused, not listed", o->refused_omitted);
		cJSON_AddStringToObject(j, "path", "");
		cJSON_AddStringToObject(j, "reason", why);
		cJSON_AddItemToArray(a, j);
	}
	return a;
}

/* dir/a/b/c: the directories on the way made (or entered) under dfd, never through a
 * symlink; the file created or truncated without following one. */
static int write_one(int dfd, const struct ps_outfile *f, char *err, size_t errlen)
{
	char comp[256];
	const char *p = f->path;
	int cur = dup(dfd), fd, rc;

	while (cur >= 0 && strchr(p, '/')) {
		size_t n = strcspn(p, "/");
		int next;

		snprintf(comp, sizeof(comp), "%.*s", (int)n, p);
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "--output-dir: mkdir %s: %s", f->path, strerror(errno));
			close(cur);
			return -1;
		}
		next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		cur = next;
		p += n + 1;
	}
	if (cur < 0) {
		snprintf(err, errlen, "--output-dir: %s: %s", f->path, strerror(errno));
		return -1;
	}
	fd = openat(cur, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(cur);
	if (fd < 0) {
		snprintf(err, errlen, "--output-dir: open %s: %s", f->path, strerror(errno));
		return -1;
	}
	rc = ps_write_all(fd, f->data, f->len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "--output-dir: write %s: %s", f->path, strerror(-rc));
		return -1;
	}
	return 0;
}

int ps_outfiles_write(const struct ps_outfiles *o, const char *dir, char *err, size_t errlen)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (dfd < 0) {
		snprintf(err, errlen, "--output-dir %s: %s", dir, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < o->n && rc == 0; i++)
		rc = write_one(dfd, &o->files[i], err, errlen);
	close(dfd);
	return rc;
}

void ps_outfiles_free(struct ps_outfiles *o)
{
	for (size_t i = 0; o->files && i < o->n; i++) {
		free(o->files[i].path);
		free(o->files[i].data);
	}
	free(o->files);
	free(o->refused);
	memset(o, 0, sizeof(*o));
}
