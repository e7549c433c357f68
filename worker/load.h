/* load.h - when the worker sends its next request: the load model.
 *
 * Only bookkeeping lives here; nothing is sent. The runner asks load_next
 * "may I send now, and what was its intended time?" until the answer is
 * not LOAD_SEND, and reports completions with load_done. Times are ns
 * since t0.
 *
 * Fixed concurrency (the only mode so far): `slots` requests in flight; a
 * slot that frees up is used again at once. A request's intended time is
 * when its slot became free (t0 for the first wave), so schedule lag
 * (start - intended) shows how fast the client reacts.
 *
 * The upcoming rate mode fits the same three calls: load_next answers
 * LOAD_WAIT with the next absolute intended time in *wake_ns (the runner
 * arms its pacer timerfd for it), and LOAD_SEND with the scheduled time as
 * the intended time, even when the runner is late (catch-up).
 *
 * Bounds: `requests` starts (requests mode) or no start at or after
 * duration (duration mode); in-flight requests always finish.
 */
#ifndef HR_WORKER_LOAD_H
#define HR_WORKER_LOAD_H

#include <stdint.h>

enum load_verdict {
	LOAD_SEND,      /* send one now; *intended_ns is set */
	LOAD_WAIT,      /* not now: *wake_ns is when to ask again, or -1 (a completion) */
	LOAD_EXHAUSTED, /* nothing more will ever be sent */
};

struct load {
	int slots;
	int in_flight;
	int64_t *free_at; /* ring of the times free slots became free */
	int free_head, free_n;
	int64_t limit;  /* requests to start; -1: unbounded */
	int64_t end_ns; /* no start at or after this; INT64_MAX: none */
	int64_t started;
	int stopped;
};

/* slots >= 1; requests > 0 bounds by count (0 with duration_s == 0: send
 * nothing); duration_s > 0 bounds by time. */
void load_init(struct load *l, int slots, int64_t requests, double duration_s);
void load_release(struct load *l);

/* Decides about the next request at now. LOAD_SEND commits: the caller
 * must send it (or report it done at once with load_done). */
int load_next(struct load *l, int64_t now, int64_t *intended_ns, int64_t *wake_ns);
/* A request finished (or was cancelled) at now: its slot is free. */
void load_done(struct load *l, int64_t now);
/* No further starts (STOP). */
void load_stop(struct load *l);
/* Nothing more to send at now, and nothing in flight. */
int load_finished(const struct load *l, int64_t now);

#endif
