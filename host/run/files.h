/* Files in a run's scratch: placed before it starts (files.c). */
#ifndef PS_FILES_H
#define PS_FILES_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"
#include "worker.h"

/* Child, cwd = the scratch, before the identity drop: copy the prebuilt matplotlib font lists
 * (cache_dir/fontlist-*.json) into ./.matplotlib, the run's MPLCONFIGDIR, owned by uid/gid.
 * A missing cache_dir is not an error. 0, or -1 with e set. */
int ps_files_seed_mpl(const char *cache_dir, uid_t uid, gid_t gid, struct ps_child_err *e);

/* Child, cwd = the scratch, before the identity drop: each input at input/NAME, read-only:
 * bind-mounted where bind (a mount namespace of the run's own), else copied (or written from
 * a served request's bytes). 0, or -1 with e set. */
int ps_files_place_inputs(const struct ps_file_in *in, size_t n, bool bind, uid_t uid,
			  gid_t gid, struct ps_child_err *e);
/* Child: ./output, the run's, whose regular files the report carries out (pyshim/files.py). */
int ps_files_make_output(uid_t uid, gid_t gid, struct ps_child_err *e);

#endif
