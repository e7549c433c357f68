/* secrets.h - the secrets the operator declares (headroomd --secret,
 * docs/security.md#secrets): each a name, where its value lives (an
 * environment variable of the daemon or a file) and the target hosts it
 * may be sent to. A spec names one as target.api_key_secret; nothing else
 * of the daemon's environment or files can reach a target.
 *
 * The list is made at start-up and read-only after: any thread may call
 * secrets_allow and secrets_read.
 */
#ifndef HR_SECRETS_H
#define HR_SECRETS_H

#include <stddef.h>

struct secret;

struct secrets {
	struct secret *v;
	size_t n;
};

/* Adds one declaration "NAME=env:VAR@HOST[,HOST...]" or
 * "NAME=file:PATH@HOST[,HOST...]" (HOST: a host name or address, any port;
 * or HOST:PORT, [V6]:PORT, only that port). Returns 0, or -1 with err. */
int secrets_add(struct secrets *s, const char *decl, char *err, size_t errlen);
void secrets_free(struct secrets *s);

/* May secret name be sent to url? 0 yes; -1 with a message in err that
 * names the field (target.api_key_secret when no such secret is declared:
 * the same message whatever the daemon's environment or files hold;
 * target.url when the url's host is not one of the secret's). A NULL url
 * (target.mock, whose address is known when the run starts) checks only
 * that the name is declared. */
int secrets_allow(const struct secrets *s, const char *name, const char *url, char *err,
                  size_t errlen);

/* Reads declared secret name's value into buf (one line, no newline).
 * Returns 0, or -1 with err (which never holds the value). */
int secrets_read(const struct secrets *s, const char *name, char *buf, size_t cap, char *err,
                 size_t errlen);

#endif
