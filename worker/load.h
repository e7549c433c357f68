/* load.h - what the worker sends when: the load model of one phase.
 *
 * Only bookkeeping lives here; nothing is sent and no clock is read. The
 * runner asks load_next "may I send now, and what?" until the answer is
 * not LOAD_SEND, reports every finished request with load_done, and
 * forwards the model's timer nodes (timers.h) when they fire. Times are
 * ns since t0; `start` is the phase start.
 *
 * Modes (share.mode):
 *   concurrency  `slots` units in flight; a unit that ends is replaced at
 *                once, its intended time being the moment its slot became
 *                free (the slot's opening time for the first). With a ramp,
 *                local slot i (global j = i*workers + worker) opens at
 *                ramp_s * j / total_slots.
 *   rate         arrival k of the global schedule (sched.h) with
 *                k % workers == worker, intended = start + its time, until
 *                rate.total_requests or rate.duration_s. Generated lazily:
 *                an overdue arrival is simply the next one taken (catch-up:
 *                all due arrivals go at once, in order, each keeping its
 *                own intended time). With a ceiling (`slots` > 0) an
 *                arrival that finds every slot busy waits - the schedule
 *                itself is the FIFO, so waiting costs no memory - and goes
 *                when a request ends.
 *   trace        the trace plan's entries, intended = start + (t - start_s)
 *                / speedup; the same ceiling rule.
 * A unit is one request, or with sessions a whole conversation (a `conv`):
 * turn j is due when turn j-1 ended plus a think time (synthetic), or at
 * the later of its timestamp and that end (trace). In concurrency mode a
 * conversation holds its slot through its think times.
 *
 * Ending: sending ends when the count is reached (requests / turns), when
 * the schedule or trace is exhausted, or at start + duration: concurrency
 * starts nothing at or after it; paced modes only schedule arrivals and
 * turns before it, and send them even when the worker is late (catch-up),
 * but what the ceiling still holds back once the time is up is dropped
 * (counted in `dropped`). Pending turns are then abandoned and load_next
 * answers LOAD_EXHAUSTED. `ended_at` is when sending ended (the end time
 * itself when the duration ended it), the start of the grace period.
 */
#ifndef HR_WORKER_LOAD_H
#define HR_WORKER_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "dsplan.h"
#include "dynbuf.h"
#include "request.h"
#include "sched.h"
#include "share.h"
#include "spec.h"
#include "timers.h"
#include "trace.h"

enum load_verdict {
	LOAD_SEND,      /* send *issue now */
	LOAD_WAIT,      /* not now: a completion or one of the model's timers will tell */
	LOAD_EXHAUSTED, /* nothing more will ever be sent */
};

/* timer node kinds (timers.h) used by the model and the runner */
enum { TN_PUMP, TN_TURN, TN_CANCEL, TN_GRACE, TN_TIMEOUT };

#define LOAD_TURN_STRIDE 1024ULL        /* turn j of session s has request index s * 1024 + j */
#define LOAD_WARMUP_OFFSET (1ULL << 40) /* warm-up request indices (sessions, rate, trace) */

/* A conversation in progress (sessions, trace sessions). Pooled. */
struct conv {
	struct tnode tn;            /* its next turn (TN_TURN); first member */
	struct conv *next;          /* ready queue / free list */
	struct conv *aprev, *anext; /* active list */
	uint64_t s;                 /* synthetic: the session index */
	uint32_t session;           /* record value */
	int turns, turn;            /* total, and the next one to issue */
	int64_t due_ns;             /* intended time of the next turn */
	bool holds_slot;            /* concurrency mode */
	bool in_flight, queued;
	const uint32_t *entries; /* trace: the entry index of each turn */
	uint32_t dsess;          /* multi_turn dataset: the conversation it plays */
	struct dynbuf hist;      /* the conversation so far (see request.h) */
};

/* One request to send. */
struct issue {
	int64_t intended_ns;
	uint64_t req_id;
	uint32_t session, turn; /* 0, 0 outside sessions */
	int isl, osl;           /* -1: drawn from the workload with req_id */
	int doc_tokens;         /* agent sessions: a document appended to this turn, 0: none */
	const uint64_t *hash_ids;
	uint32_t n_hash;
	struct conv *conv; /* NULL outside sessions */
	bool more;         /* the conversation has another turn after this one */
};

/* A trace cut to this worker's part (built once, at SCHEDULE). */
struct trace_plan {
	struct trace tr;
	uint32_t *starts; /* entries that start a unit here: alone, or a session's first */
	size_t n_starts;
	int32_t *sess_of; /* per entry: its session (index into sess), -1 */
	struct tp_sess {
		uint32_t first, off, n; /* first entry, turns[off .. off + n) */
	} * sess;
	size_t n_sess;
	uint32_t *turns;
	double start_s, speedup;
};

/* Builds the plan from the spec's trace text and the share (window,
 * speedup, requests / duration limits of the profiling phase, worker
 * split). Returns 0, or -1 with a message in err. */
/* The same from a trace already parsed (a dataset's): takes *tr. */
int trace_plan_build_from(struct trace_plan *tp, struct trace *tr, const struct share *sh,
                          char *err);
int trace_plan_build(struct trace_plan *tp, const struct spec *spec, const struct share *sh,
                     char *err);
void trace_plan_release(struct trace_plan *tp);

struct load_cfg {
	const struct share_phase *ph; /* borrowed */
	int phase;                    /* HR_PHASE_* */
	int worker, workers;
	uint64_t seed;
	uint64_t req_offset; /* a traffic class's request ids start here (SCHEDULE class) */
	bool sessions; /* synthetic sessions */
	struct spec_dist turns, think_s;
	const struct spec_agent *agent; /* agent sessions' tool times and documents, or NULL */
	const struct trace_plan *tp; /* trace mode */
	const struct dsplan *dp;     /* a dataset: multi_turn conversations drive sessions */
	struct theap *heap;          /* borrowed: where the model's timers go */
};

struct load {
	struct load_cfg c;
	int mode;
	int64_t start, end; /* end: INT64_MAX when not bounded by time */
	int64_t limit;      /* sends allowed in this phase; -1: no count */
	int64_t issued;
	int in_flight;
	int ceiling;      /* rate / trace: 0 = none */
	bool held;        /* the ceiling blocked and no slot has freed since */
	uint64_t req_off; /* LOAD_WARMUP_OFFSET in the warm-up */
	bool begun, stopped, ended;
	int64_t ended_at;
	bool gen_done, gen_done_time; /* no new units; because of the time limit */
	struct tnode pump;            /* TN_PUMP: next arrival / slot opening */
	struct tnode endn;            /* TN_PUMP at the end: drop what the ceiling holds */
	/* conversations */
	struct conv *free_convs, *active;
	struct conv *rq_head, *rq_tail; /* turns due, waiting to go */
	int n_active_convs;
	/* concurrency */
	int slots, opened;
	int64_t *free_at; /* ring of the times free slots became free */
	int free_head, free_n;
	uint64_t units; /* units started (sessions, or requests) */
	/* rate */
	struct sched sched;
	uint64_t next_k;
	int64_t next_ns;
	/* trace */
	size_t tpos;
	/* arrivals still waiting for a slot when the duration ended (dropped) */
	uint64_t dropped;
};

void load_init(struct load *l, const struct load_cfg *cfg);
void load_release(struct load *l);

/* The phase starts at start (ns since t0). */
void load_begin(struct load *l, int64_t start);
/* Decides about the next request at now. LOAD_SEND commits: the caller
 * sends *is (or reports it done at once with load_done). */
int load_next(struct load *l, int64_t now, struct issue *is);
/* A request of conv (NULL: none) ended at now; ok: the conversation may
 * go on (the request succeeded and its answer was kept). */
void load_done(struct load *l, struct conv *c, int64_t now, bool ok);
/* conv's TN_TURN node fired: its next turn is due. */
void load_turn_due(struct load *l, struct conv *c);
/* No further sends (STOP, the end of the phase). */
void load_stop(struct load *l, int64_t now);
/* Sending is over and nothing is in flight. */
/* Sends due by now that have not been made (arrivals and turns waiting, in
 * rate and trace modes also those held back by the concurrency ceiling;
 * in concurrency mode, free slots not refilled yet). *oldest: how long
 * the oldest of them has been due (0 when none). Read-only. */
uint64_t load_queued(const struct load *l, int64_t now, int64_t *oldest);
static inline bool load_finished(const struct load *l)
{
	return l->ended && l->in_flight == 0;
}

#endif
