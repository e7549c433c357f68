/* curvekey.h - ZeroMQ CURVE key files shared by headroom-agent and
 * headroomd (docs/agents.md, "Keys"): PREFIX.pub holds the Z85 public key
 * on one line, PREFIX.key the Z85 secret key (mode 0600); the public key
 * is always derived again from the secret one. */
#ifndef HR_CURVEKEY_H
#define HR_CURVEKEY_H

#define CURVEKEY_Z85 41 /* 40 Z85 characters and the NUL */

/* Writes PREFIX.pub and PREFIX.key (refusing to replace either). 0, or -1
 * with err. pub (may be NULL) receives the public key. */
int curvekey_generate(const char *prefix, char *pub, char *err);
/* Reads one Z85 key (40 characters, an optional line end, nothing else)
 * from path. 0, or -1 with err. */
int curvekey_read(const char *path, char *key, char *err);
/* Whether text is a well-formed Z85 key of 40 characters. */
int curvekey_valid(const char *text);
/* The public key of a secret one. 0, or -1. */
int curvekey_public(const char *secret, char *pub);

#endif
