/* kill_at.c - an LD_PRELOAD shim for the crash matrix (test_durability):
 * kills the process that loads it with SIGKILL just before it sends the
 * HR_KILL_AT_NTH-th (default 1st) worker-protocol message of type
 * HR_KILL_AT_TYPE (lib/proto.h: 1 HELLO, 6 RECORDS, 8 DONE ...), counting
 * only after it has sent one of type HR_KILL_AFTER_TYPE when that is set.
 * HR_KILL_DELAY_MS first waits that long, so that what was sent before
 * (queued in ZeroMQ's I/O thread) has reached the daemon: the test then
 * knows exactly what arrived. A message's header is its first frame of
 * two bytes, [version, type], sent with ZMQ_SNDMORE (lib/proto.c).
 *
 * Under AddressSanitizer the preloaded library comes before the runtime;
 * the test sets ASAN_OPTIONS=verify_asan_link_order=0 for that. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

typedef int (*send_fn)(void *, const void *, size_t, int);

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);
	return s && *s ? strtol(s, NULL, 10) : dflt;
}

int zmq_send(void *sock, const void *buf, size_t len, int flags)
{
	static send_fn real;
	static long seen;
	static int armed = -1;
	if (!real)
		real = (send_fn)dlsym(RTLD_NEXT, "zmq_send");
	long type = env_long("HR_KILL_AT_TYPE", -1), after = env_long("HR_KILL_AFTER_TYPE", -1);
	if (armed < 0)
		armed = after < 0;
	int header = len == 2 && (flags & ZMQ_SNDMORE);
	int t = header ? ((const unsigned char *)buf)[1] : -1;
	if (header && armed && t == type && ++seen == env_long("HR_KILL_AT_NTH", 1)) {
		long ms = env_long("HR_KILL_DELAY_MS", 0);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		kill(getpid(), SIGKILL);
	}
	int rc = real(sock, buf, len, flags);
	if (header && t == after)
		armed = 1;
	return rc;
}
