/* `pysnip kernel install`: a kernelspec (NAME/kernel.json) that Jupyter's clients find on their
 * JUPYTER_PATH and start as `pysnip kernel -f {connection_file}`. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "kernel.h"
#include "policy/policy.h"
#include "util/util.h"

/* jupyter_client's rule for a kernel name: letters, digits, '.', '_', '-'. */
static bool name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return false;
	return true;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int kernels_dir(const struct ps_kernelspec_opts *o, char *buf, size_t len)
{
	const char *data = getenv("JUPYTER_DATA_DIR"), *home = getenv("HOME");

	if (o->dir)
		snprintf(buf, len, "%s/share/jupyter/kernels", o->dir);
	else if (o->user && data && *data)
		snprintf(buf, len, "%s/kernels", data);
	else if (o->user && home && *home)
		snprintf(buf, len, "%s/.local/share/jupyter/kernels", home);
	else if (o->user) {
		ps_err("kernel install --user: neither JUPYTER_DATA_DIR nor HOME is set");
		return -1;
	} else
		snprintf(buf, len, "/usr/local/share/jupyter/kernels");
	return 0;
}

static cJSON *spec_json(const struct ps_kernelspec_opts *o)
{
	cJSON *j = cJSON_CreateObject(), *argv = cJSON_CreateArray();
	char display[160];

	cJSON_AddItemToArray(argv, cJSON_CreateString(o->exe));	/* pysnip-kernel itself */
	cJSON_AddItemToArray(argv, cJSON_CreateString("kernel"));
	cJSON_AddItemToArray(argv, cJSON_CreateString("-f"));
	cJSON_AddItemToArray(argv, cJSON_CreateString("{connection_file}"));
	if (o->policy) {
		cJSON_AddItemToArray(argv, cJSON_CreateString("--policy"));
		cJSON_AddItemToArray(argv, cJSON_CreateString(o->policy));
	}
	for (const char *const *a = o->limit_args; a && *a; a++)
		cJSON_AddItemToArray(argv, cJSON_CreateString(*a));
	snprintf(display, sizeof(display), "Python 3 (pysnip sandbox%s%s)", o->policy ? ", " : "",
		 o->policy ? o->policy : "");
	cJSON_AddItemToObject(j, "argv", argv);
	cJSON_AddStringToObject(j, "display_name", display);
	cJSON_AddStringToObject(j, "language", "python");
	cJSON_AddStringToObject(j, "interrupt_mode", "message");
	cJSON_AddItemToObject(j, "env", cJSON_CreateObject());
	cJSON_AddItemToObject(j, "metadata", cJSON_CreateObject());
	return j;
}

int ps_kernelspec_install(const struct ps_kernelspec_opts *o)
{
	const char *name = o->name ? o->name : "pysnip";
	char dir[PATH_MAX], file[PATH_MAX + 16], err[256];
	struct ps_policy p;
	cJSON *j = NULL;
	char *text = NULL;
	FILE *f;
	int rc = PS_EXIT_USAGE, e;

	if (!name_ok(name)) {
		ps_err("kernel install --name %s: letters, digits, '.', '_' and '-' only", name);
		return PS_EXIT_USAGE;
	}
	if (o->policy) {	/* a kernelspec that cannot start is found out now, not in a notebook */
		if (ps_policy_load(o->policy, &p, err, sizeof(err)) < 0) {
			ps_err("kernel install --policy: %s", err);
			return PS_EXIT_USAGE;
		}
		ps_policy_free(&p);
	}
	if (kernels_dir(o, dir, sizeof(dir) - 80) < 0)
		return PS_EXIT_USAGE;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name);
	e = mkdirs(dir);
	if (e < 0) {
		ps_err("kernel install: mkdir %s: %s", dir, strerror(-e));
		return PS_EXIT_USAGE;
	}
	j = spec_json(o);
	text = cJSON_Print(j);
	snprintf(file, sizeof(file), "%s/kernel.json", dir);
	f = text ? fopen(file, "w") : NULL;
	if (!f) {
		ps_err("kernel install: %s: %s", file, text ? strerror(errno) : "out of memory");
		goto out;
	}
	fprintf(f, "%s\n", text);
	if (fclose(f) != 0) {
		ps_err("kernel install: writing %s: %s", file, strerror(errno));
		goto out;
	}
	printf("%s\n", dir);
	rc = PS_EXIT_OK;
out:
	cJSON_free(text);
	cJSON_Delete(j);
	return rc;
}
