/* runner.h - the run executor: one thread that takes queued runs in
 * submission order and drives each through its worker pool.
 *
 * For a run it binds a ZeroMQ ROUTER, spawns the workers, hands out the
 * schedule shares, ingests record batches (passed on to the store's
 * writer), watches heartbeats and child processes, and when the run ends
 * computes and stores the summary. Lifecycle and failure rules:
 * api/protocol.md and ARCHITECTURE.md. The runner thread owns its ZeroMQ
 * socket; other threads only call runner_kick/runner_cancel/runner_free.
 */
#ifndef HR_RUNNER_H
#define HR_RUNNER_H

#include <stdint.h>

#include "netallow.h"
#include "secrets.h"
#include "store.h"

struct runner_opts {
	const char *data_dir;    /* borrowed; ipc sockets live here when short enough */
	const char *worker_bin;  /* borrowed; path of headroom-worker */
	/* borrowed, may be NULL: words run before the worker's own command
	 * (--worker-prefix: "taskset -c 2-3", "unshare --time --monotonic=5") */
	const char *worker_prefix;
	const char *transport;   /* "ipc" (default) or "tcp" */
	int default_workers;     /* used when a spec gives none */
	const char *nvml_lib;    /* borrowed; NULL: HEADROOM_NVML_LIB or the system's */
	const char *mock_bin;    /* borrowed; headroom-mock for specs with target.mock */
	const struct secrets *secrets; /* borrowed; target.api_key_secret names one (secrets.h) */
	int retain_days;         /* retention after each run (history.h); 0: keep all */
	int retain_per_fp;       /* newest runs kept per fingerprint; 0: no limit */
	/* borrowed: the targets allowed (--allow-target, the daemon's own
	 * address); NULL: all. Read at each run's start; when set, no run
	 * starts before runner_allow_ready (the daemon's address is known only
	 * once the API is bound) */
	const struct netallow *allow;
};

struct runner;

/* At start-up, before runner_start: each run still marked 'running' (the
 * last daemon crashed or was killed) ends 'interrupted' with a summary
 * computed from the records the store holds. Returns how many, or -1. */
int runner_recover(struct store *s, int default_workers, char *err);
/* Starts the runner thread (first removing run-*.sock files a crashed
 * daemon left in data_dir). */
int runner_start(struct store *s, const struct runner_opts *o, struct runner **out, char *err);
/* opts.allow is complete: runs may start. */
void runner_allow_ready(struct runner *r);
/* A run was queued: wake the runner. Any thread. */
void runner_kick(struct runner *r);
/* Stop run id if it is the one running (the store already has the request). */
void runner_cancel(struct runner *r, int64_t id);
/* Stops the current run (it ends 'interrupted', its records kept), joins. */
void runner_free(struct runner *r);

#endif
