/* config.h - headroomd's configuration file (docs/operations.md,
 * "Configuration"): one option per line, `key = value`, the keys being the
 * long command-line options without their dashes (`listen = 0.0.0.0:8443`,
 * `allow-target = 10.0.0.0/8:8000`), a flag as `key = true` (or false);
 * blank lines and lines starting with # are ignored; a key that may repeat
 * on the command line (allow-target, allowed-host, secret) may repeat.
 * The file's options come first and the command line's after them, so the
 * command line wins where an option takes one value.
 */
#ifndef HR_CONFIG_H
#define HR_CONFIG_H

#include <stddef.h>

struct config_args {
	char **argv;    /* "--key", "value", ... (owned) */
	char **origin;  /* per entry: "FILE:LINE" (owned), NULL from the command line */
	int argc, cap;
};

/* Appends the options of the file at path. 0, or -1 with a message
 * naming the file, the line and the key printed on stderr. */
int config_load(const char *path, struct config_args *out);
/* Appends one argument from the command line. */
void config_add(struct config_args *c, const char *arg, const char *origin);
void config_free(struct config_args *c);

#endif
