/* run.h - the measuring phase of a worker: requests in flight, started as
 * the load model allows, their records handed to the outbox.
 *
 * The runner owns a pool of requests (struct req, one easy handle each),
 * created on first need and reused; at most `slots` exist in concurrency
 * mode. Sending is split from deciding: run_pump asks the load model
 * (load.h) and calls send_one for each LOAD_SEND, so a paced mode only
 * changes the model and arms a timer for LOAD_WAIT.
 *
 * Thread affinity: the loop's thread.
 */
#ifndef HR_WORKER_RUN_H
#define HR_WORKER_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "load.h"
#include "loop.h"
#include "outbox.h"
#include "request.h"
#include "share.h"
#include "spec.h"

struct run {
	struct loop *loop;  /* borrowed */
	struct outbox *ob;  /* borrowed */
	struct req_cfg cfg; /* owned; the requests point at it (struct run must not move) */
	struct load load;
	struct req **idle; /* pooled, not in flight */
	int n_idle;
	struct req **active; /* in flight; req->index is the position */
	int n_active, cap;
	uint64_t req_id_base, req_id_stride;
	uint64_t sent, completed, errors; /* sent doubles as the next seq */
	int64_t t0;
	bool begun;
	bool interrupted; /* an outbox wait was interrupted by a signal */
};

/* Prepares a run from a validated spec and share (both borrowed; nothing
 * is kept from them). Installs itself as the loop's done callback.
 * Returns 0, or -1 with a message in err (e.g. the API key variable is
 * not set). */
int run_init(struct run *r, struct loop *loop, struct outbox *ob, const struct spec *spec,
             const struct share *sh, uint32_t worker, char *err);
/* Frees the pool. Nothing may be in flight (run_cancel first). */
void run_release(struct run *r);

/* Time zero has come (t0: absolute monotonic ns): fills the slots. */
void run_begin(struct run *r, int64_t t0);
/* Starts whatever the load model allows now. */
void run_pump(struct run *r);
/* Aborts everything in flight, recording it as cancelled (why: message),
 * and starts nothing more. */
void run_cancel(struct run *r, const char *why);
/* True once begun, nothing more to send and nothing in flight. */
bool run_finished(struct run *r);

#endif
