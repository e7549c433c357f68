/* slow_send.c - an LD_PRELOAD shim for the worker tests: after each of the
 * first HR_SLOW_SEND_MESSAGES complete ZeroMQ messages a process sends, it
 * sleeps HR_SLOW_SEND_MS milliseconds. A test uses it to make the daemon's
 * next message arrive while the worker is still inside its own send, the
 * window a busy machine opens by descheduling the worker there (ZMQ_FD is
 * edge-triggered, so what arrives then must not be forgotten).
 *
 * Under AddressSanitizer the preloaded library comes before the runtime;
 * the test sets ASAN_OPTIONS=verify_asan_link_order=0 for that. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <zmq.h>

typedef int (*send_fn)(void *, const void *, size_t, int);

static long env_long(const char *name)
{
	const char *s = getenv(name);
	return s ? strtol(s, NULL, 10) : 0;
}

int zmq_send(void *sock, const void *buf, size_t len, int flags)
{
	static send_fn real;
	static long sent;
	if (!real)
		real = (send_fn)dlsym(RTLD_NEXT, "zmq_send");
	int rc = real(sock, buf, len, flags);
	if (rc >= 0 && !(flags & ZMQ_SNDMORE) && sent++ < env_long("HR_SLOW_SEND_MESSAGES")) {
		long ms = env_long("HR_SLOW_SEND_MS");
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return rc;
}
