/* clocksync.h - a worker's clock offset from the daemon's, measured over
 * the connection they already share.
 *
 * An exchange is four times: t1 the daemon sends, t2 the worker receives,
 * t3 the worker answers (its clock), t4 the daemon receives (docs/client.md,
 * "One clock"). Its offset (worker clock minus daemon clock) is
 *   theta = ((t2 - t1) + (t3 - t4)) / 2
 * and its delay, the round trip less the worker's own time,
 *   delta = (t4 - t1) - (t3 - t2).
 * Whatever the two directions' delays, the true offset lies within
 * theta +- delta / 2; the exchange with the least delay gives the
 * tightest bound, so a burst of exchanges keeps that one (the minimum
 * delay filter of NTP and AIPerf). Bursts repeated through a run give the
 * drift: the least-squares slope of their offsets against the daemon's
 * time, in parts per million.
 */
#ifndef HR_CLOCKSYNC_H
#define HR_CLOCKSYNC_H

#include <stddef.h>
#include <stdint.h>

struct clock_sample {
	int64_t t1, t2, t3, t4;
};

struct clock_est {
	int ok;            /* 0: no usable exchange */
	int64_t offset_ns; /* worker clock - daemon clock */
	int64_t bound_ns;  /* |true offset - offset_ns| <= bound_ns */
	int64_t delay_ns;  /* the chosen exchange's delay (round trip, less the worker's time) */
	int64_t at_ns;     /* daemon time of that exchange (the midpoint of t1 and t4) */
};

/* One exchange: 0 with its offset and delay, -1 when its times are
 * impossible (t4 before t1, t3 before t2, a negative delay). */
int clock_eval(const struct clock_sample *s, int64_t *offset_ns, int64_t *delay_ns);
/* The minimum-delay estimate of n exchanges (out->ok 0 when none is usable). */
void clock_estimate(const struct clock_sample *s, size_t n, struct clock_est *out);
/* The least-squares drift, in ppm, of n estimates (their at_ns and
 * offset_ns); NaN with fewer than two, or when they span under 1 s. */
double clock_drift_ppm(const struct clock_est *e, size_t n);
/* The error bound over a run of a timeline that maps a worker's times with
 * one estimate, used (the one its START used): at used's time its own
 * bound; at each later tight estimate k (bound within 4x the tightest of
 * the n: a loose one, from a busy worker, says little and a tight
 * neighbour covers its time) |e_k.offset - used.offset| + e_k.bound. The
 * largest of these: a clock that drifts, or a first estimate that was
 * poor, widens it. */
int64_t clock_timeline_bound(const struct clock_est *used, const struct clock_est *e, size_t n);

#endif
