/* wclock.c - each worker's clock against the daemon's (lib/clocksync.h,
 * docs/client.md "One clock"): a worker whose HELLO said "clock" gets a
 * burst of CLOCK exchanges before its SCHEDULE, and one every
 * CLOCK_EVERY_NS through the run; each burst's minimum-delay estimate,
 * the drift across bursts, and the summary's `clock`. */
#include <math.h>
#include <stdlib.h>

#include "runner_int.h"
#include "util.h"

static void clock_send(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	w->seq++;
	w->pending = 1;
	w->sent_t1 = mono_ns();
	json_t *o =
	    json_pack("{s:I, s:I}", "seq", (json_int_t)w->seq, "t1", (json_int_t)w->sent_t1);
	runproto_send(c, i, PROTO_CLOCK, o, 0);
	json_decref(o);
}

static void clock_burst(struct run_ctx *c, int i, int n)
{
	struct wk *w = &c->w[i];
	w->left = n;
	w->n_ex = 0;
	clock_send(c, i);
}

/* The drift assumed when the bursts measured none: NTP-disciplined hosts
 * keep within tens of ppm of each other, workers of one host share a clock. */
#define CLOCK_DRIFT_FLOOR_PPM 10.0

/* How far w's estimate may have moved by daemon time at_ns: its age times
 * the drift of the worker's tight bursts (those within 4x the tightest
 * bound: a burst answered by a busy worker says little about the slope),
 * or CLOCK_DRIFT_FLOOR_PPM while they measure none. */
static int64_t clock_stale_ns(const struct wk *w, int64_t at_ns)
{
	int64_t dt = at_ns - w->est.at_ns, best = INT64_MAX;
	if (dt <= 0)
		return 0;
	for (int k = 0; k < w->nb; k++)
		if (w->bursts[k].bound_ns < best)
			best = w->bursts[k].bound_ns;
	struct clock_est tight[CLOCK_MAX_BURSTS];
	size_t n = 0;
	for (int k = 0; k < w->nb; k++)
		if (w->bursts[k].bound_ns <= 4 * best)
			tight[n++] = w->bursts[k];
	double ppm = clock_drift_ppm(tight, n);
	ppm = isnan(ppm) ? CLOCK_DRIFT_FLOOR_PPM : fabs(ppm);
	return (int64_t)((double)dt * ppm / 1e6);
}

/* A burst is over: its minimum-delay estimate becomes the worker's unless
 * the one it has is still the tighter (its bound widened by the drift
 * since: a busy worker answers late, and its burst's bound is wide); the
 * first one lets its SCHEDULE go. */
static void clock_burst_end(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	struct clock_est e;
	clock_estimate(w->ex, (size_t)w->n_ex, &e);
	w->pending = 0;
	w->left = 0;
	w->last_burst = mono_ns();
	if (e.ok) {
		if (!w->est.ok || e.bound_ns <= w->est.bound_ns + clock_stale_ns(w, e.at_ns))
			w->est = e;
		w->last_at = e.at_ns;
		if (w->nb < CLOCK_MAX_BURSTS) {
			if (!w->bursts)
				w->bursts = xcalloc(CLOCK_MAX_BURSTS, sizeof *w->bursts);
			w->bursts[w->nb++] = e;
		}
	}
	if (!w->synced) {
		w->synced = 1;
		runproto_clock_synced(c, i);
	}
}

/* the next exchange of the burst, or its end */
static void clock_next(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	w->pending = 0;
	if (--w->left > 0 && !c->stopping && w->n_ex < CLOCK_FIRST)
		clock_send(c, i);
	else
		clock_burst_end(c, i);
}

/* the worker answers exchanges: its first burst, before its SCHEDULE */
void wclock_begin(struct run_ctx *c, int i)
{
	c->w[i].clock = 1;
	clock_burst(c, i, CLOCK_FIRST);
}

/* the answer to the pending exchange (a late or stray one is dropped: its
 * seq or t1 is not the pending one's) */
void wclock_answer(struct run_ctx *c, int i, int64_t seq, int64_t t1, int64_t t2, int64_t t3,
                   int64_t t4)
{
	struct wk *w = &c->w[i];
	if (!w->clock || !w->pending || seq != w->seq || t1 != w->sent_t1)
		return;
	w->ex[w->n_ex++] = (struct clock_sample){w->sent_t1, t2, t3, t4};
	clock_next(c, i);
}

/* Answers given up; a burst every CLOCK_EVERY_NS while the run goes. */
void wclock_tick(struct run_ctx *c, int64_t now)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (!w->clock || w->exited || w->state == W_DONE)
			continue;
		if (w->pending && now - w->sent_t1 > CLOCK_WAIT_NS)
			clock_next(c, i);
		else if (!w->pending && w->synced && c->t0 && !c->stopping &&
		         now - w->last_burst >= CLOCK_EVERY_NS && w->nb < CLOCK_MAX_BURSTS)
			clock_burst(c, i, CLOCK_BURST);
	}
}

/* The summary's `clock`: each worker's offset from the daemon's clock,
 * its bound and drift (docs/api.md, "Summary JSON"). */
json_t *wclock_json(const struct run_ctx *c)
{
	json_t *ws = json_array();
	int64_t max_bound = -1;
	int measured = 0;
	for (int i = 0; i < c->n; i++) {
		const struct wk *w = &c->w[i];
		if (!w->clock || !w->est.ok) {
			json_array_append_new(ws,
			                      json_pack("{s:i, s:b}", "worker", i, "measured", 0));
			continue;
		}
		measured++;
		double drift = clock_drift_ppm(w->bursts, (size_t)w->nb);
		/* the timeline's offset (the one its START used) and its bound over
		 * the run; a worker stopped before START: the kept estimate's */
		const struct clock_est *e = w->t0_est.ok ? &w->t0_est : &w->est;
		int64_t bound = w->t0_est.ok
		                    ? clock_timeline_bound(&w->t0_est, w->bursts, (size_t)w->nb)
		                    : w->est.bound_ns + clock_stale_ns(w, w->last_at);
		if (bound > max_bound)
			max_bound = bound;
		json_array_append_new(
		    ws,
		    json_pack("{s:i, s:b, s:I, s:I, s:I, s:i, s:o}", "worker", i, "measured", 1,
		              "offset_ns", (json_int_t)e->offset_ns, "bound_ns", (json_int_t)bound,
		              "delay_ns", (json_int_t)e->delay_ns, "bursts", w->nb, "drift_ppm",
		              isnan(drift) ? json_null() : json_real(drift)));
	}
	return json_pack("{s:s, s:i, s:i, s:f, s:o, s:i, s:o}", "method", "minimum delay",
	                 "exchanges_first", CLOCK_FIRST, "exchanges_later", CLOCK_BURST, "every_s",
	                 (double)CLOCK_EVERY_NS / 1e9, "max_bound_ns",
	                 max_bound >= 0 ? json_integer((json_int_t)max_bound) : json_null(),
	                 "measured", measured, "workers", ws);
}
