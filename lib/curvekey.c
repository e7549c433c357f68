/* curvekey.c - ZeroMQ CURVE key files (curvekey.h). */
#include "curvekey.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "hrlimits.h"
#include "util.h"

int curvekey_valid(const char *text)
{
	if (strlen(text) != 40)
		return 0;
	uint8_t bin[32];
	return zmq_z85_decode(bin, text) != NULL;
}

int curvekey_public(const char *secret, char *pub)
{
	return zmq_curve_public(pub, secret) == 0 ? 0 : -1;
}

static int write_new(const char *path, const char *text, mode_t mode, char *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return errf(err, "cannot create %s: %s", path, strerror(errno));
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int bad = w != (ssize_t)len || fsync(fd) != 0;
	if (close(fd) != 0 || bad) {
		unlink(path);
		return errf(err, "cannot write %s", path);
	}
	return 0;
}

int curvekey_generate(const char *prefix, char *pub, char *err)
{
	if (!zmq_has("curve"))
		return errf(err, "this libzmq has no CURVE support");
	char p[CURVEKEY_Z85], s[CURVEKEY_Z85];
	if (zmq_curve_keypair(p, s) != 0)
		return errf(err, "cannot make a key pair: %s", zmq_strerror(zmq_errno()));
	char path_pub[4200], path_key[4200];
	if (snprintf(path_pub, sizeof path_pub, "%s.pub", prefix) >= (int)sizeof path_pub ||
	    snprintf(path_key, sizeof path_key, "%s.key", prefix) >= (int)sizeof path_key)
		return errf(err, "the prefix is too long");
	char line[CURVEKEY_Z85 + 2];
	snprintf(line, sizeof line, "%s\n", s);
	if (write_new(path_key, line, 0600, err) < 0)
		goto wipe;
	snprintf(line, sizeof line, "%s\n", p);
	if (write_new(path_pub, line, 0644, err) < 0) {
		unlink(path_key);
		goto wipe;
	}
	if (pub)
		memcpy(pub, p, CURVEKEY_Z85);
	explicit_bzero(s, sizeof s);
	explicit_bzero(line, sizeof line);
	return 0;
wipe:
	explicit_bzero(s, sizeof s);
	explicit_bzero(line, sizeof line);
	return -1;
}

int curvekey_read(const char *path, char *key, char *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, "cannot open %s: %s", path, strerror(errno));
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return errf(err, "cannot read %s: %s", path, strerror(errno));
	buf[n] = 0;
	size_t len = (size_t)n;
	if (len && buf[len - 1] == '\n')
		buf[--len] = 0;
	if (len && buf[len - 1] == '\r')
		buf[--len] = 0;
	int ok = len == 40 && !memchr(buf, 0, len) && curvekey_valid(buf);
	if (ok)
		memcpy(key, buf, CURVEKEY_Z85);
	explicit_bzero(buf, sizeof buf);
	if (!ok)
		return errf(err, "%s does not hold one Z85 key (40 characters on one line)", path);
	return 0;
}
