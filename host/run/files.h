/* Files in a run's scratch: placed before it starts (files.c). */
#ifndef PS_FILES_H
#define PS_FILES_H

#include <sys/types.h>

#include "sandbox/sandbox.h"

/* Child, cwd = the scratch, before the identity drop: copy the prebuilt matplotlib font lists
 * (cache_dir/fontlist-*.json) into ./.matplotlib, the run's MPLCONFIGDIR, owned by uid/gid.
 * A missing cache_dir is not an error. 0, or -1 with e set. */
int ps_files_seed_mpl(const char *cache_dir, uid_t uid, gid_t gid, struct ps_child_err *e);

#endif
