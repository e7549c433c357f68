/* run.h - the measuring phases of a worker: requests in flight, started
 * as the load model allows, their records handed to the outbox.
 *
 * The runner owns a pool of requests (struct req, one easy handle each),
 * created on first need and reused, the deadline heap (timers.h) and the
 * pacer: one timerfd armed at the absolute CLOCK_MONOTONIC time of the
 * earliest deadline (t0 + its time), dispatched before other events.
 * Sending is split from deciding: run_pump asks the load model (load.h)
 * and sends each LOAD_SEND. When the pacer fires, every deadline that is
 * due is handled (turns, cancellations, the grace period), run_pump sends
 * what is due - all of it, in order, when late, in batches of PUMP_BATCH
 * with the loop's other events in between - and libcurl is kicked so the
 * new transfers leave at once.
 *
 * A run has one or two phases (warm-up, profiling), one at a time:
 * run_begin starts one, run_phase_finished says when it is over,
 * run_end_phase releases its model. Counters cover all phases; the
 * phase_* ones the current one.
 *
 * Thread affinity: the loop's thread.
 */
#ifndef HR_WORKER_RUN_H
#define HR_WORKER_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "csample.h"
#include "dsplan.h"
#include "load.h"
#include "loop.h"
#include "outbox.h"
#include "request.h"
#include "share.h"
#include "spec.h"
#include "timers.h"
#include "tokenizer.h"
#include "tokprompt.h"

struct run {
	struct loop *loop;  /* borrowed */
	struct outbox *ob;  /* borrowed */
	struct req_cfg cfg; /* owned; the requests point at it (struct run must not move) */
	struct share sh;    /* a copy */
	struct trace_plan tp;
	bool have_tp;
	struct theap heap;
	struct loop_timer *pacer;
	int64_t armed;   /* what the pacer is armed for (ns since t0), INT64_MIN: nothing */
	int64_t spin_ns; /* wake this early and spin to the deadline (HEADROOM_WORKER_SPIN_US) */
	bool backlog;    /* run_pump stopped after PUMP_BATCH sends: more may be due */
	int prewarmed;   /* requests whose connections target.prewarm opened */
	bool pump_due;   /* a completion during the loop's reads: pump after the batch */
	struct load load;
	bool have_load;    /* a phase is running */
	int phase;         /* HR_PHASE_* of the current / last phase */
	struct req **idle; /* pooled, not in flight */
	int n_idle;
	struct req **active; /* in flight; req->index is the position */
	int n_active, cap;
	uint64_t sent, completed, errors; /* sent doubles as the next seq */
	uint64_t phase_sent, phase_completed;
	struct tnode grace; /* TN_GRACE */
	bool grace_armed;
	int64_t grace_ns;
	double cancel_fraction;
	int64_t cancel_after_ns;
	char cancel_msg[64];
	int64_t t0;
	bool begun;
	bool interrupted; /* an outbox wait was interrupted by a signal */
	/* self-telemetry (csample.h): lateness since the last sample, totals */
	int64_t late[CSAMPLE_LATE_BUCKETS];
	int64_t late_max;
	uint64_t conn_errors, port_errors;
	int64_t burn_ns; /* HEADROOM_WORKER_BURN_US: CPU burnt per send (tests, demos) */
	uint64_t wake;       /* the loop wake-up the send budget counts for */
	int wake_sends;      /* sends made in it */
	int64_t wake_start;  /* when its first send was considered */
	struct dynbuf sys_hist;   /* workload.system_prompt as a history fragment, or empty */
	int prefix_count, prefix_tokens; /* workload.prefix_prompts */
	int system_tokens;               /* workload.system_prompt.tokens, else 0 */
	struct dynbuf prefix_buf; /* the current request's prefix prompt */
	struct spec_mix mix[HR_MAX_MIX]; /* workload.mix */
	int n_mix;
	double mix_total;
	struct dsplan dp;     /* workload.kind dataset */
	bool have_dp;
	struct tok *tok;      /* workload.tokenizer, loaded at init; NULL without */
	struct tokprompt tprompt; /* valid with tok; cfg.tp points here */
	struct spec_agent agent;  /* the spec's agent sessions settings (load_cfg.agent) */
};

/* Prepares a run from a validated spec and share (both borrowed; nothing
 * is kept from them). Installs itself as the loop's done callback.
 * Returns 0, or -1 with a message in err (e.g. the API key variable is
 * not set, the trace cannot be read). */
int run_init(struct run *r, struct loop *loop, struct outbox *ob, const struct spec *spec,
             const struct share *sh, uint32_t worker, char *err);
/* Fills the run's part of a self-telemetry sample (in flight, queued,
 * lateness, errors, totals) and starts the next lateness interval. */
void run_sample(struct run *r, struct csample *s);
/* Frees the pool. Nothing may be in flight (run_cancel first). */
void run_release(struct run *r);

/* Starts phase (HR_PHASE_WARMUP: the share's warm-up, else its profiling
 * part) whose schedule begins at t0 + phase_start_ns (absolute monotonic
 * t0). Sends what is due at once; the rest follows the pacer. */
void run_begin(struct run *r, int phase, int64_t t0, int64_t phase_start_ns);
/* Starts whatever the load model allows now. */
void run_pump(struct run *r);
/* Aborts everything in flight, recording it as cancelled (why: message),
 * and starts nothing more in this phase. */
void run_cancel(struct run *r, const char *why);
/* The current phase has sent its share and nothing is in flight. */
bool run_phase_finished(struct run *r);
/* Releases the finished phase's model. */
void run_end_phase(struct run *r);

#endif
