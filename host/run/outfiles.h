/* Files out of a run (outfiles.c): from its report, checked, to the verdict and the
 * caller's directory. Parent side. */
#ifndef PS_OUTFILES_H
#define PS_OUTFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct cJSON;

struct ps_outfile {
	char *path;		/* relative, checked */
	unsigned char *data;
	size_t len;
	char sha256[65];
};

struct ps_outfile_refused {
	char path[256];
	char reason[96];
};

struct ps_outfiles {
	struct ps_outfile *files;
	size_t n;
	uint64_t bytes;
	struct ps_outfile_refused *refused;	/* at most 64; the rest counted */
	size_t n_refused, refused_omitted;
};

/* Why path may not name an output file, or NULL. */
const char *ps_outfile_name_problem(const char *path);
/* The report's "files" and "files_refused" into o, under l's output_files caps. 0 or -ENOMEM
 * (o is then partly filled; free it either way). */
int ps_outfiles_take(const struct cJSON *report, const struct ps_limits *l,
		     struct ps_outfiles *o);
/* [{path, size, sha256 (, content: base64)}] and [{path, reason}]. */
struct cJSON *ps_outfiles_json(const struct ps_outfiles *o, bool content);
struct cJSON *ps_outfiles_refused_json(const struct ps_outfiles *o);
/* Each file below dir (which must exist). 0, or -1 with the message in err. */
int ps_outfiles_write(const struct ps_outfiles *o, const char *dir, char *err, size_t errlen);
void ps_outfiles_free(struct ps_outfiles *o);

#endif
