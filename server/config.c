/* config.c - headroomd's configuration file (see config.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The options a file may set: the long options of headroomd (server/main.c)
 * but those that only print (help, version, list-routes) or read a file
 * (config, check-config). flag: takes no value on the command line. */
static const struct {
	const char *key;
	int flag;
} keys[] = {
    {"listen", 0},         {"data", 0},          {"transport", 0},
    {"worker-bin", 0},     {"worker-prefix", 0}, {"mock-bin", 0},      {"nvml-lib", 0},
    {"default-workers", 0}, {"retain-days", 0},  {"retain-per-fingerprint", 0},
    {"min-free-mb", 0},    {"readers", 0},       {"export-readers", 0},
    {"reader-wait-ms", 0}, {"max-connections", 0}, {"max-connections-per-client", 0},
    {"max-queued-runs", 0}, {"summary-memory-mb", 0}, {"allowed-host", 0},
    {"allow-target", 0},   {"secret", 0},        {"secrets-dir", 0},
    {"tls-cert", 0},       {"tls-key", 0},       {"backup-dir", 0},
    {"log-format", 0},     {"log-level", 0},     {"access-log", 1},
    {"require-tokens", 1}, {"insecure-plaintext", 1}, {"no-migration-copy", 1},
    {"agent-listen", 0},   {"agent-key", 0},
};

void config_add(struct config_args *c, const char *arg, const char *origin)
{
	if (c->argc + 1 >= c->cap) {
		c->cap = c->cap ? c->cap * 2 : 32;
		c->argv = xrealloc(c->argv, (size_t)c->cap * sizeof *c->argv);
		c->origin = xrealloc(c->origin, (size_t)c->cap * sizeof *c->origin);
	}
	c->argv[c->argc] = xstrdup(arg);
	c->origin[c->argc] = origin ? xstrdup(origin) : NULL;
	c->argc++;
	c->argv[c->argc] = NULL;
}

void config_free(struct config_args *c)
{
	for (int i = 0; i < c->argc; i++) {
		free(c->argv[i]);
		free(c->origin[i]);
	}
	free(c->argv);
	free(c->origin);
	memset(c, 0, sizeof *c);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int config_load(const char *path, struct config_args *out)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "headroomd: cannot read the configuration %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, rc = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if ((size_t)n != strlen(line)) {
			fprintf(stderr, "headroomd: %s:%d: a NUL byte in the line\n", path, lineno);
			rc = -1;
			break;
		}
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			fprintf(stderr, "headroomd: %s:%d: expected 'key = value', got '%.80s'\n", path,
				lineno, s);
			rc = -1;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		if (strncmp(key, "--", 2) == 0)
			key += 2; /* tolerated: the option as written on the command line */
		size_t k = 0;
		while (k < HR_ARRAY_LEN(keys) && strcmp(keys[k].key, key) != 0)
			k++;
		char where[300];
		snprintf(where, sizeof where, "%s:%d (%.64s)", path, lineno, key);
		if (k == HR_ARRAY_LEN(keys)) {
			fprintf(stderr, "headroomd: %s:%d: unknown key '%.64s' (the keys are the long "
					"options of headroomd --help)\n",
				path, lineno, key);
			rc = -1;
			break;
		}
		/* "a value" may be quoted to keep spaces at its ends */
		size_t vl = strlen(val);
		if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
			val[vl - 1] = '\0';
			val++;
		}
		char opt[80];
		snprintf(opt, sizeof opt, "--%s", keys[k].key);
		if (keys[k].flag) {
			if (strcmp(val, "true") == 0 || strcmp(val, "yes") == 0) {
				config_add(out, opt, where);
			} else if (strcmp(val, "false") != 0 && strcmp(val, "no") != 0) {
				fprintf(stderr, "headroomd: %s:%d: '%s' is true or false, not '%.64s'\n",
					path, lineno, key, val);
				rc = -1;
			}
			continue;
		}
		if (!*val) {
			fprintf(stderr, "headroomd: %s:%d: '%s' needs a value\n", path, lineno, key);
			rc = -1;
			break;
		}
		config_add(out, opt, where);
		config_add(out, val, where);
	}
	free(line);
	if (ferror(f) && rc == 0) {
		fprintf(stderr, "headroomd: cannot read the configuration %s\n", path);
		rc = -1;
	}
	fclose(f);
	return rc;
}
