/* check-policy's word on the native libraries a policy's numpy really loads: which BLAS
 * (reference, OpenBLAS, MKL...), found by loading numpy's core extension here and asking the
 * dynamic loader what came with it, and whether matplotlib's prebuilt font list exists. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libprobe.h"

static const char *const blas_names[] = { "openblas", "libblas", "libmkl", "blis", "atlas" };

struct found {
	char path[PATH_MAX];
};

static int each_lib(struct dl_phdr_info *info, size_t size, void *data)
{
	struct found *f = data;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	for (size_t i = 0; i < sizeof(blas_names) / sizeof(blas_names[0]) && !f->path[0]; i++)
		if (strstr(base, blas_names[i]) && !realpath(info->dlpi_name, f->path))
			snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
	return 0;
}

/* numpy/core/_multiarray_umath*.so under one of the policy's python paths. */
static int find_umath(const struct ps_policy *p, char *out, size_t len)
{
	for (size_t i = 0; i < p->python_paths.n; i++) {
		char dir[PATH_MAX];
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "%s/numpy/core", p->python_paths.items[i]);
		if (!(d = opendir(dir)))
			continue;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "_multiarray_umath.", 18) && strstr(de->d_name, ".so") &&
			    strlen(dir) + strlen(de->d_name) + 2 <= len) {
				snprintf(out, len, "%.*s/%s", (int)(len - 2 - strlen(de->d_name)), dir,
					 de->d_name);
				closedir(d);
				return 0;
			}
		closedir(d);
	}
	return -1;
}

static const char *blas_kind(const char *path)
{
	if (strstr(path, "openblas"))
		return "OpenBLAS (threads capped by OPENBLAS_NUM_THREADS=1)";
	if (strstr(path, "mkl"))
		return "MKL";
	if (strstr(path, "blis"))
		return "BLIS";
	if (strstr(path, "atlas"))
		return "ATLAS";
	return "reference BLAS (netlib, single-threaded)";
}

void ps_libprobe_add(const struct ps_policy *p, struct cJSON *root)
{
	cJSON *libs;
	char umath[PATH_MAX];
	struct found f = { "" };
	char mpl[PATH_MAX];
	DIR *d;

	if (!ps_strlist_has(&p->modules_allow, "numpy") || find_umath(p, umath, sizeof(umath)) < 0)
		return;
	if (!(libs = cJSON_AddObjectToObject(root, "libraries")))
		return;
	/* as in a run: one thread, before the library's constructor reads it */
	setenv("OPENBLAS_NUM_THREADS", "1", 1);
	setenv("OMP_NUM_THREADS", "1", 1);
	if (!dlopen(umath, RTLD_LAZY | RTLD_LOCAL)) {
		const char *e = dlerror();

		cJSON_AddStringToObject(libs, "numpy_error", e ? e : "dlopen failed");
	} else {
		dl_iterate_phdr(each_lib, &f);
		cJSON_AddStringToObject(libs, "numpy_core", umath);
		if (f.path[0]) {
			cJSON_AddStringToObject(libs, "blas", f.path);
			cJSON_AddStringToObject(libs, "blas_kind", blas_kind(f.path));
		} else {
			cJSON_AddNullToObject(libs, "blas");
		}
	}
	snprintf(mpl, sizeof(mpl), "%s", ps_mpl_cache_dir());
	d = opendir(mpl);
	if (d)
		closedir(d);
	if (ps_strlist_has(&p->modules_allow, "matplotlib")) {
		if (d)
			cJSON_AddStringToObject(libs, "matplotlib_font_cache", mpl);
		else
			cJSON_AddNullToObject(libs, "matplotlib_font_cache");
	}
}
