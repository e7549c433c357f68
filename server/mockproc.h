/* mockproc.h - a headroom-mock child process for runs whose spec asks for
 * one (target.mock, e.g. the runs of a calibration). */
#ifndef HR_SERVER_MOCKPROC_H
#define HR_SERVER_MOCKPROC_H

#include <sys/types.h>

struct mockproc {
	pid_t pid;
	int out;        /* read end of its stdout */
	char addr[128]; /* HOST:PORT it listens on */
};

/* Starts bin on a free loopback port (zero delay, quiet) and waits up to
 * 5 s for its "listening on HOST:PORT" line. Returns 0, or -1 with err. */
int mockproc_start(struct mockproc *m, const char *bin, char *err);
/* SIGTERM, then SIGKILL if it has not exited within 2 s; reaps it. */
void mockproc_stop(struct mockproc *m);

#endif
