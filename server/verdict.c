/* verdict.c - the client verdict of a run (verdict.h).
 *
 * The evidence is the workers' self-telemetry over the profiling phase
 * (client_samples, about one sample per worker per second) and the run's
 * own records (schedule lag, achieved rate, from the summary). The rules,
 * in order; their thresholds come from the spec's `client` section, with
 * the defaults given here (docs/client.md explains the choice):
 *
 *   client_bound when any of
 *     busy   a worker's event loop was busy (time outside epoll_wait, as
 *            wall time: being preempted or throttled counts) at or above
 *            max_loop_busy (0.9) for at least max_busy_share (20%) of its
 *            profiling time;
 *     lag    the schedule lag p99 (records: actual minus intended send)
 *            is over max_lag_ms (10 ms), with at least LAG_MIN_SENDS sends
 *            and no concurrency ceiling that explains the wait (rate and
 *            trace runs with max_concurrency wait for slots by design);
 *     timer  the pacer's lateness p99 (worker histograms) is over
 *            max_lag_ms for sure (the lower edge of the bucket that holds
 *            the p99 reaches it), with at least TIMER_MIN_WAKEUPS wake-ups;
 *     ports  a connection failed for want of a local port (EADDRNOTAVAIL);
 *     read_lag  the stamps of stream reads were late: the p99 of the read
 *            lag (the stamp minus the kernel's receive time of the read's
 *            data where the native transport had it, else minus when the
 *            loop could first have seen the socket ready; worker
 *            histograms, the upper edge of the bucket holding the p99, so
 *            "could be") is over the
 *            tolerance: READ_INFLATION (5%) of the run's TTFT p50 (request
 *            latency p50 without TTFT), at least READ_LAG_FLOOR_MS (2 ms),
 *            with at least READ_MIN_READS reads. A reported latency
 *            percentile may then be inflated by more than the tolerance;
 *   and, as supporting evidence when busy or lag holds, a rate run without
 *   a ceiling whose achieved send rate is under RATE_MIN_FRACTION (90%) of
 *   the requested one.
 *
 *   inconclusive, when nothing above holds, if
 *     host_lag  the kernel read lag is over the read_lag tolerance while
 *            the loop's own read lag is within it and no loop was busy:
 *            the stamps were late because the host did not run the worker
 *            in time, not for the load generator's work (the figures may
 *            still be inflated: not ok, but not the client's limit), or
 *     at least BURST_WINDOW_SHARE (1%) of a worker's 100 ms windows had its
 *     loop busy at or above max_loop_busy (bursts near the ceiling the
 *     one-second samples average away), or
 *     a worker sent no self-telemetry for the profiling phase, or
 *     a worker's loop was busy BUSY_NEAR (70%) or more on average: close
 *     enough to its ceiling that a burst may have been shaped by it.
 *
 *   ok otherwise.
 *
 * The busy rule is the primary one: it is measured where the work is done,
 * needs no model of the server, and is not fooled by a slow server (a
 * worker waiting for responses is idle). Lag and timer lateness catch a
 * client that is not busy but still late (an overcommitted host, a CPU
 * quota) - the schedule was not kept, whoever is to blame on the host.
 */
#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "client.h"
#include "util.h"

#define LAG_MIN_SENDS 200 /* below this the p99 is little more than the worst send */
#define TIMER_MIN_WAKEUPS 200 /* as LAG_MIN_SENDS */
#define RATE_MIN_FRACTION 0.9
#define BUSY_NEAR 0.7
#define READ_MIN_READS 200
#define READ_INFLATION 0.05
#define READ_LAG_FLOOR_MS 2.0
#define BURST_WINDOW_SHARE 0.01

struct wstat {
	int samples;
	double time_s;      /* profiling time covered */
	double busy_time_s; /* of which in samples at or over max_loop_busy */
	double busy_sum, cpu_sum; /* interval-weighted */
	double busy_max, cpu_max;
	int64_t late[CSAMPLE_LATE_BUCKETS];
	int64_t late_max_ns;
	int64_t in_flight_max, queued_max, queued_age_max, backlog_max;
	int64_t conn_errors, port_errors;
	int64_t read_lag[CSAMPLE_LATE_BUCKETS];
	int64_t read_lag_max_ns;
	int64_t kern_lag[CSAMPLE_LATE_BUCKETS];
	int64_t kern_lag_max_ns;
	int64_t windows[CSAMPLE_WIN_BUCKETS];
};

static int64_t hsum(const int64_t *h, int n)
{
	int64_t t = 0;
	for (int b = 0; b < n; b++)
		t = csample_add(t, h[b]);
	return t;
}

/* The first window bucket counted as saturated at max_busy. */
static int sat_bucket(double max_busy)
{
	int b = (int)floor(max_busy * CSAMPLE_WIN_BUCKETS + 1e-9);
	return b < 0 ? 0 : b >= CSAMPLE_WIN_BUCKETS ? CSAMPLE_WIN_BUCKETS - 1 : b;
}

static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static double metric(json_t *summary, const char *name, const char *field)
{
	json_t *v = json_object_get(
	    json_object_get(json_object_get(summary, "metrics"), name), field);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void reason(json_t *list, const char *code, int worker, double value, double limit,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void reason(json_t *list, const char *code, int worker, double value, double limit,
		   const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *o = json_pack("{s:s, s:s}", "code", code, "message", msg);
	json_object_set_new(o, "worker", worker >= 0 ? json_integer(worker) : json_null());
	json_object_set_new(o, "value", real_or_null(value));
	json_object_set_new(o, "limit", real_or_null(limit));
	json_array_append_new(list, o);
}

/* "1,720" */
static void thousands(char *out, size_t n, double v)
{
	char raw[32];
	snprintf(raw, sizeof raw, "%.0f", v);
	size_t len = strlen(raw), k = 0;
	for (size_t i = 0; i < len && k + 2 < n; i++) {
		if (i && raw[i - 1] != '-' && (len - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = raw[i];
	}
	out[k] = '\0';
}

/* Milliseconds for a message: "0.42", "12.3", "5,018". */
static const char *ms_text(char *out, size_t n, double v)
{
	if (v == floor(v) && v < 100)
		snprintf(out, n, "%.0f", v);
	else if (v < 1)
		snprintf(out, n, "%.2f", v);
	else if (v < 100)
		snprintf(out, n, "%.1f", v);
	else
		thousands(out, n, v);
	return out;
}

/* Whether every point of the calibration has an open-loop sustained rate. */
static int has_open_loop(json_t *pts)
{
	size_t i;
	json_t *p;
	json_array_foreach(pts, i, p)
	{
		if (!json_is_number(json_object_get(p, "sustained_requests_per_s")))
			return 0;
	}
	return json_array_size(pts) > 0;
}

/* The calibrated ceiling at the run's mean output length: for a paced run
 * (rate, trace) the open-loop sustained rate when the calibration measured
 * one at every output length, otherwise the closed-loop figures. */
static json_t *ceiling(struct store *s, json_t *summary, int workers, int mode)
{
	json_t *cal = calib_latest(s);
	if (!cal)
		return json_null();
	double osl = metric(summary, "output_sequence_length", "avg");
	double thr = metric(summary, "request_throughput", "avg");
	double rps = NAN, tps = NAN;
	json_t *pts = json_object_get(json_object_get(cal, "result"), "points");
	int open = mode != SPEC_LOAD_CONCURRENCY && has_open_loop(pts);
	const char *rkey = open ? "sustained_requests_per_s" : "requests_per_s";
	size_t n = json_array_size(pts);
	/* points are sorted by osl: interpolate linearly, clamp at the ends */
	for (size_t i = 0; i < n && isfinite(osl); i++) {
		json_t *p = json_array_get(pts, i);
		double o = json_number_value(json_object_get(p, "osl"));
		double r = json_number_value(json_object_get(p, rkey));
		double t = json_number_value(json_object_get(p, "tokens_per_s"));
		if (i == 0 && osl <= o) {
			rps = r;
			tps = t;
			break;
		}
		if (i + 1 == n) {
			rps = r;
			tps = t;
			break;
		}
		json_t *q = json_array_get(pts, i + 1);
		double o2 = json_number_value(json_object_get(q, "osl"));
		if (osl <= o2 && o2 > o) {
			double f = (osl - o) / (o2 - o);
			rps = r + f * (json_number_value(json_object_get(q, rkey)) - r);
			tps = t + f * (json_number_value(json_object_get(q, "tokens_per_s")) - t);
			break;
		}
	}
	if (open)
		tps = rps * osl; /* the open-loop steps stream the output length at that rate */
	double per_worker = workers > 0 ? thr / workers : NAN;
	json_t *o = json_object();
	json_object_set(o, "calibration_id", json_object_get(cal, "id"));
	json_object_set(o, "host", json_object_get(cal, "host"));
	json_object_set_new(o, "basis", json_string(open ? "open_loop" : "closed_loop"));
	json_object_set_new(o, "osl", real_or_null(osl));
	json_object_set_new(o, "requests_per_s_per_worker", real_or_null(rps));
	json_object_set_new(o, "tokens_per_s_per_worker", real_or_null(tps));
	json_object_set_new(o, "achieved_requests_per_s_per_worker", real_or_null(per_worker));
	json_object_set_new(o, "fraction",
			    real_or_null(rps > 0 ? per_worker / rps : NAN));
	json_decref(cal);
	return o;
}

json_t *verdict_compute(struct store *s, int64_t run_id, const struct spec *spec, int workers,
			json_t *summary)
{
	double max_busy = spec->client.max_loop_busy, max_share = spec->client.max_busy_share;
	double max_lag = spec->client.max_lag_ms;
	if (workers < 1)
		workers = 1;
	struct wstat *ws = xcalloc((size_t)workers, sizeof *ws);
	double d_cpu_max = NAN;
	int64_t d_backlog_max = -1;
	int daemon_samples = 0;
	struct client_cursor *cur = client_cursor_open(s, run_id, 0);
	struct client_row r;
	while (cur && client_cursor_row(cur, &r) == 1) {
		if (r.worker < 0) {
			daemon_samples++;
			if (!(d_cpu_max >= r.cpu))
				d_cpu_max = r.cpu;
			if (r.record_backlog > d_backlog_max)
				d_backlog_max = r.record_backlog;
			continue;
		}
		if (r.worker >= workers || r.phase != 1)
			continue; /* the warm-up is not judged */
		struct wstat *w = &ws[r.worker];
		double dt = (double)r.interval_ns / 1e9;
		w->samples++;
		w->time_s += dt;
		if (isfinite(r.busy)) {
			w->busy_sum += r.busy * dt;
			if (r.busy >= max_busy)
				w->busy_time_s += dt;
			if (r.busy > w->busy_max)
				w->busy_max = r.busy;
		}
		if (isfinite(r.cpu)) {
			w->cpu_sum += r.cpu * dt;
			if (r.cpu > w->cpu_max)
				w->cpu_max = r.cpu;
		}
		for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
			w->late[b] = csample_add(w->late[b], r.late[b]);
		if (r.late_max_ns > w->late_max_ns)
			w->late_max_ns = r.late_max_ns;
#define MAXOF(field, v) \
	if ((v) > w->field) \
	w->field = (v)
		MAXOF(in_flight_max, r.in_flight);
		MAXOF(queued_max, r.queued);
		MAXOF(queued_age_max, r.queued_age_ns);
		MAXOF(backlog_max, r.record_backlog);
		MAXOF(conn_errors, r.conn_errors);
		MAXOF(port_errors, r.port_errors);
		MAXOF(read_lag_max_ns, r.read_lag_max_ns);
		MAXOF(kern_lag_max_ns, r.kern_lag_max_ns);
#undef MAXOF
		for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++) {
			w->read_lag[b] = csample_add(w->read_lag[b], r.read_lag[b]);
			w->kern_lag[b] = csample_add(w->kern_lag[b], r.kern_lag[b]);
		}
		for (int b = 0; b < CSAMPLE_WIN_BUCKETS; b++)
			w->windows[b] = csample_add(w->windows[b], r.windows[b]);
	}
	int cursor_failed = cur == NULL;
	client_cursor_free(cur);

	json_t *reasons = json_array(), *notes = json_array(), *per = json_array();
	int bound = 0, unsure = 0;
	int64_t late_all[CSAMPLE_LATE_BUCKETS] = {0}, late_max = 0, wakeups = 0;
	int64_t in_flight_max = 0, queued_max = 0, queued_age_max = 0, backlog_max = 0;
	int64_t conn_errors = 0, port_errors = 0;
	double busy_avg_max = NAN, busy_max = NAN, cpu_avg_max = NAN, cpu_max = NAN;
	int busy_hit = 0;
	int64_t rlag_all[CSAMPLE_LATE_BUCKETS] = {0}, rlag_max = 0, reads = 0;
	int64_t klag_all[CSAMPLE_LATE_BUCKETS] = {0}, klag_max = 0, kreads = 0;
	int64_t win_all = 0, win_sat = 0;
	int win_peak = -1, sb = sat_bucket(max_busy);
	json_t *burst_notes = json_array();
	for (int i = 0; i < workers; i++) {
		struct wstat *w = &ws[i];
		if (w->samples == 0 || w->time_s <= 0) {
			unsure = 1;
			reason(notes, "no_telemetry", i, NAN, NAN,
			       "worker %d sent no self-telemetry for the profiling phase", i);
			json_array_append_new(per, json_pack("{s:i, s:i}", "worker", i, "samples", 0));
			continue;
		}
		double busy_avg = w->busy_sum / w->time_s, cpu_avg = w->cpu_sum / w->time_s;
		double share = w->busy_time_s / w->time_s;
		int64_t wk = 0;
		for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++) {
			late_all[b] = csample_add(late_all[b], w->late[b]);
			wk = csample_add(wk, w->late[b]);
		}
		wakeups = csample_add(wakeups, wk);
		int64_t q = wk ? csample_late_quantile(w->late, 0.99) : 0;
		double lp99 = !wk || q == INT64_MAX ? NAN : (double)q / 1e6;
		if (w->late_max_ns > late_max)
			late_max = w->late_max_ns;
		if (!(busy_avg_max >= busy_avg))
			busy_avg_max = busy_avg;
		if (!(busy_max >= w->busy_max))
			busy_max = w->busy_max;
		if (!(cpu_avg_max >= cpu_avg))
			cpu_avg_max = cpu_avg;
		if (!(cpu_max >= w->cpu_max))
			cpu_max = w->cpu_max;
		in_flight_max =
		    csample_add(in_flight_max, w->in_flight_max > 0 ? w->in_flight_max : 0);
		queued_max = csample_add(queued_max, w->queued_max > 0 ? w->queued_max : 0);
		if (w->queued_age_max > queued_age_max)
			queued_age_max = w->queued_age_max;
		if (w->backlog_max > backlog_max)
			backlog_max = w->backlog_max;
		conn_errors = csample_add(conn_errors, w->conn_errors > 0 ? w->conn_errors : 0);
		port_errors = csample_add(port_errors, w->port_errors > 0 ? w->port_errors : 0);
		json_t *o = json_pack("{s:i, s:i, s:f}", "worker", i, "samples", w->samples,
				      "window_s", w->time_s);
		json_object_set_new(o, "loop_busy_avg", json_real(busy_avg));
		json_object_set_new(o, "loop_busy_max", json_real(w->busy_max));
		json_object_set_new(o, "busy_share", json_real(share));
		json_object_set_new(o, "cpu_avg", json_real(cpu_avg));
		json_object_set_new(o, "cpu_max", json_real(w->cpu_max));
		json_object_set_new(o, "timer_wakeups", json_integer((json_int_t)wk));
		json_object_set_new(o, "timer_late_p99_ms", real_or_null(lp99));
		json_object_set_new(o, "timer_late_max_ms", json_real((double)w->late_max_ns / 1e6));
		json_object_set_new(o, "in_flight_max", json_integer((json_int_t)w->in_flight_max));
		json_object_set_new(o, "queued_max", json_integer((json_int_t)w->queued_max));
		json_object_set_new(o, "port_errors", json_integer((json_int_t)w->port_errors));
		int64_t wr = hsum(w->read_lag, CSAMPLE_LATE_BUCKETS);
		int64_t wq = wr ? csample_late_quantile(w->read_lag, 0.99) : 0;
		int64_t wn = hsum(w->windows, CSAMPLE_WIN_BUCKETS), ws_sat = 0;
		for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++) {
			rlag_all[b] = csample_add(rlag_all[b], w->read_lag[b]);
			klag_all[b] = csample_add(klag_all[b], w->kern_lag[b]);
		}
		reads = csample_add(reads, wr);
		kreads = csample_add(kreads, hsum(w->kern_lag, CSAMPLE_LATE_BUCKETS));
		if (w->kern_lag_max_ns > klag_max)
			klag_max = w->kern_lag_max_ns;
		if (w->read_lag_max_ns > rlag_max)
			rlag_max = w->read_lag_max_ns;
		for (int b = 0; b < CSAMPLE_WIN_BUCKETS; b++) {
			if (b >= sb)
				ws_sat = csample_add(ws_sat, w->windows[b]);
			if (w->windows[b] > 0 && b > win_peak)
				win_peak = b;
		}
		win_all = csample_add(win_all, wn);
		win_sat = csample_add(win_sat, ws_sat);
		json_object_set_new(o, "reads", json_integer((json_int_t)wr));
		json_object_set_new(o, "read_lag_p99_ms",
				    real_or_null(!wr || wq == INT64_MAX ? NAN : (double)wq / 1e6));
		json_object_set_new(o, "read_lag_max_ms",
				    json_real((double)(w->read_lag_max_ns > 0 ? w->read_lag_max_ns : 0) /
					      1e6));
		json_object_set_new(o, "busy_windows", json_integer((json_int_t)wn));
		json_object_set_new(o, "busy_windows_saturated", json_integer((json_int_t)ws_sat));
		if (wn > 0 && ws_sat > 0 && (double)ws_sat >= BURST_WINDOW_SHARE * (double)wn)
			reason(burst_notes, "busy_windows", i, (double)ws_sat / (double)wn,
			       BURST_WINDOW_SHARE,
			       "worker %d loop busy %.0f%% or more in %lld of its %lld 100 ms windows",
			       i, max_busy * 100, (long long)ws_sat, (long long)wn);
		int wk_class = spec_class_of_worker(spec, (uint32_t)i);
		if (wk_class >= 0) /* a worker's class: whose sends a busy loop held back */
			json_object_set_new(o, "class", json_string(spec->classes[wk_class].name));
		json_array_append_new(per, o);
		if (share >= max_share && share > 0) {
			bound = busy_hit = 1;
			reason(reasons, "loop_busy", i, share, max_share,
			       "worker %d loop busy %.0f%% or more for %.0f%% of the window "
			       "(peak %.0f%%, average %.0f%%)",
			       i, max_busy * 100, share * 100, w->busy_max * 100, busy_avg * 100);
			if (wk_class >= 0)
				json_object_set_new(
				    json_array_get(reasons, json_array_size(reasons) - 1), "class",
				    json_string(spec->classes[wk_class].name));
		} else if (busy_avg >= BUSY_NEAR) {
			unsure = 1;
			reason(notes, "loop_busy_near", i, busy_avg, BUSY_NEAR,
			       "worker %d loop busy %.0f%% on average: close to its ceiling", i,
			       busy_avg * 100);
		}
	}
	free(ws);

	/* lag: the records' own evidence; with traffic classes, each class's
	 * sends against its own schedule (a class under a ceiling waits by
	 * design), naming the classes that fell behind */
	const struct spec_load *ld = &spec->load;
	int ceilinged = ld->mode != SPEC_LOAD_CONCURRENCY && ld->max_concurrency > 0;
	double lag_p99 = metric(summary, "schedule_lag", "p99");
	int lag_hit = 0;
	json_t *behind = json_array();
	int nscope = spec->n_classes ? spec->n_classes : 1;
	for (int k = 0; k < nscope; k++) {
		const struct spec *ks = spec->n_classes ? spec->classes[k].spec : spec;
		const char *cname = spec->n_classes ? spec->classes[k].name : NULL;
		json_t *ksum = cname ? json_object_get(json_object_get(summary, "classes"), cname)
				     : summary;
		int kceil = ks->load.mode != SPEC_LOAD_CONCURRENCY && ks->load.max_concurrency > 0;
		double kp99 = metric(ksum, "schedule_lag", "p99");
		double kn = metric(ksum, "schedule_lag", "count");
		if (kceil || !(kn >= LAG_MIN_SENDS) || !(kp99 > max_lag))
			continue;
		bound = lag_hit = 1;
		char a[32], b[32];
		reason(reasons, "schedule_lag", -1, kp99, max_lag,
		       "%s%s%sschedule lag p99 %s ms over the %s ms limit%s", cname ? "class " : "",
		       cname ? cname : "", cname ? ": " : "", ms_text(a, sizeof a, kp99),
		       ms_text(b, sizeof b, max_lag),
		       busy_hit ? "" : " (no worker loop was busy: the host may be overcommitted)");
		if (cname) {
			json_object_set_new(json_array_get(reasons, json_array_size(reasons) - 1),
					    "class", json_string(cname));
			json_array_append_new(behind, json_string(cname));
		}
	}
	/* the p99 lies in one bucket of the histogram: [lo, hi) */
	int64_t hi_ns = wakeups ? csample_late_quantile(late_all, 0.99) : 0;
	double late_p99 = hi_ns == INT64_MAX ? NAN : (double)hi_ns / 1e6; /* its upper edge */
	double late_lo = 0;
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS - 1; b++)
		if (csample_late_edges_ns[b] < hi_ns && (double)csample_late_edges_ns[b] / 1e6 > late_lo)
			late_lo = (double)csample_late_edges_ns[b] / 1e6;
	/* over the limit for sure: even the bucket's lower edge reaches it */
	if (wakeups >= TIMER_MIN_WAKEUPS && late_lo >= max_lag) {
		char a[32], b[32], c[32];
		bound = 1;
		if (hi_ns == INT64_MAX)
			reason(reasons, "timer_late", -1, late_lo, max_lag,
			       "pacer timer late by more than %s ms at p99 (worst %s ms), over "
			       "the %s ms limit",
			       ms_text(a, sizeof a, late_lo),
			       ms_text(c, sizeof c, (double)late_max / 1e6),
			       ms_text(b, sizeof b, max_lag));
		else
			reason(reasons, "timer_late", -1, late_lo, max_lag,
			       "pacer timer late by %s to %s ms at p99, over the %s ms limit",
			       ms_text(a, sizeof a, late_lo), ms_text(c, sizeof c, late_p99),
			       ms_text(b, sizeof b, max_lag));
	}
	if (port_errors > 0) {
		bound = 1;
		reason(reasons, "local_ports", -1, (double)port_errors, 0,
		       "%lld connection(s) failed for want of a local port (EADDRNOTAVAIL)",
		       (long long)port_errors);
	}
	/* read_lag: how late the stamps of stream reads were, against the
	 * tolerance on the run's typical latency */
	double ref_ms = metric(summary, "time_to_first_token", "p50");
	const char *ref_name = "TTFT";
	if (!(ref_ms > 0)) {
		ref_ms = metric(summary, "request_latency", "p50");
		ref_name = "request latency";
	}
	double rl_limit = READ_LAG_FLOOR_MS;
	if (ref_ms > 0 && READ_INFLATION * ref_ms > rl_limit)
		rl_limit = READ_INFLATION * ref_ms;
	int64_t rq = reads ? csample_late_quantile(rlag_all, 0.99) : 0;
	double rl_p99 = !reads || rq == INT64_MAX ? NAN : (double)rq / 1e6;
	int64_t kq = kreads ? csample_late_quantile(klag_all, 0.99) : 0;
	double kl_p99 = !kreads || kq == INT64_MAX ? NAN : (double)kq / 1e6;
	char wtext[96] = "";
	if (win_all > 0)
		snprintf(wtext, sizeof wtext, "; loop busy %.0f%% or more in %lld of %lld 100 ms windows",
			 max_busy * 100, (long long)win_sat, (long long)win_all);
	/* judged on the kernel's receive times when the reads carried them
	 * (native transport: the stamp minus when the data arrived), else on
	 * the loop's bound (after the loop could first have seen them) */
	int by_kernel = kreads >= READ_MIN_READS;
	int64_t jq = by_kernel ? kq : rq;
	double jp99 = by_kernel ? kl_p99 : rl_p99;
	int64_t jmax = by_kernel ? klag_max : rlag_max;
	int over = (by_kernel || reads >= READ_MIN_READS) && (jq == INT64_MAX || jp99 > rl_limit);
	/* the host's alone: late against the kernel's times, while the loop's
	 * own lag kept within the tolerance and no loop was busy */
	int host_only = over && by_kernel && !busy_hit && reads >= READ_MIN_READS &&
			rq != INT64_MAX && !(rl_p99 > rl_limit);
	if (over) {
		char a[32], b[32], c[32], d[32];
		json_t *list = host_only ? notes : reasons;
		if (host_only)
			unsure = 1;
		else
			bound = 1;
		reason(list, host_only ? "host_lag" : "read_lag", -1,
		       jq == INT64_MAX ? INFINITY : jp99, rl_limit,
		       "stream reads stamped %s%s ms after %s at p99 (worst %s ms), over the %s ms "
		       "tolerance (%.0f%% of the %s p50 of %s ms, at least %.0f ms): reported "
		       "latencies may be inflated by more than that%s",
		       jq == INT64_MAX ? "over " : "up to ",
		       ms_text(a, sizeof a, jq == INT64_MAX ? 50 : jp99),
		       by_kernel ? "the kernel received their data" : "their sockets were ready",
		       ms_text(b, sizeof b, (double)jmax / 1e6), ms_text(c, sizeof c, rl_limit),
		       READ_INFLATION * 100, ref_name, ms_text(d, sizeof d, ref_ms > 0 ? ref_ms : 0),
		       READ_LAG_FLOOR_MS, wtext);
		json_t *last = json_array_get(list, json_array_size(list) - 1);
		json_object_set_new(last, "measure", json_string(by_kernel ? "kernel" : "loop"));
		if (!busy_hit) { /* the message has room: its buffer is 400 bytes */
			char m[520];
			snprintf(m, sizeof m, "%s (%s)",
				 json_string_value(json_object_get(last, "message")),
				 host_only ? "the loop's own read lag was within it and no worker loop "
					     "was busy: the host did not run the worker in time"
					   : "no worker loop was busy: the host may be overcommitted");
			json_object_set_new(last, "message", json_string(m));
		}
		if (isinf(json_real_value(json_object_get(last, "value"))))
			json_object_set_new(last, "value", json_null());
	}
	if (!bound && json_array_size(burst_notes) > 0) {
		unsure = 1;
		json_array_extend(notes, burst_notes);
	}
	json_decref(burst_notes);
	json_t *load = json_object_get(summary, "load");
	double req_rate = json_number_value(json_object_get(load, "requested_rate"));
	double ach_rate = json_number_value(json_object_get(load, "achieved_rate"));
	if (ld->mode == SPEC_LOAD_RATE && !ceilinged && ld->ramp_s <= 0 && req_rate > 0 &&
	    ach_rate > 0 && ach_rate < RATE_MIN_FRACTION * req_rate && (busy_hit || lag_hit)) {
		char a[32], q[32];
		thousands(a, sizeof a, ach_rate);
		thousands(q, sizeof q, req_rate);
		reason(reasons, "rate_shortfall", -1, ach_rate / req_rate, RATE_MIN_FRACTION,
		       "achieved %s/s of %s/s requested", a, q);
	}
	if (cursor_failed) {
		unsure = 1;
		reason(notes, "no_telemetry", -1, NAN, NAN, "the client samples could not be read");
	}

	json_t *ceil = ceiling(s, summary, workers, ld->mode);
	double frac = json_number_value(json_object_get(ceil, "fraction"));
	if (frac >= 0.9)
		reason(notes, "near_calibrated_ceiling", -1, frac, 0.9,
		       "load per worker is %.0f%% of this host's calibrated ceiling", frac * 100);

	const char *verdict = bound ? "client_bound" : unsure ? "inconclusive" : "ok";
	json_t *head = json_object();
	json_object_set_new(head, "workers", json_integer(workers));
	json_object_set_new(head, "loop_busy_avg", real_or_null(busy_avg_max));
	json_object_set_new(head, "loop_busy_max", real_or_null(busy_max));
	json_object_set_new(head, "cpu_avg", real_or_null(cpu_avg_max));
	json_object_set_new(head, "cpu_max", real_or_null(cpu_max));
	json_object_set_new(head, "timer_wakeups", json_integer((json_int_t)wakeups));
	json_object_set_new(head, "timer_late_p99_ms", real_or_null(late_p99));
	json_object_set_new(head, "timer_late_max_ms", json_real((double)late_max / 1e6));
	json_object_set_new(head, "schedule_lag_p99_ms", real_or_null(lag_p99));
	json_object_set_new(head, "reads", json_integer((json_int_t)reads));
	json_object_set_new(head, "read_lag_p99_ms", real_or_null(rl_p99));
	json_object_set_new(head, "read_lag_max_ms", json_real((double)rlag_max / 1e6));
	json_object_set_new(head, "read_lag_limit_ms", json_real(rl_limit));
	json_object_set_new(head, "kernel_reads", json_integer((json_int_t)kreads));
	json_object_set_new(head, "kernel_lag_p99_ms", real_or_null(kl_p99));
	json_object_set_new(head, "kernel_lag_max_ms", json_real((double)klag_max / 1e6));
	json_object_set_new(head, "busy_windows", json_integer((json_int_t)win_all));
	json_object_set_new(head, "busy_windows_saturated", json_integer((json_int_t)win_sat));
	json_object_set_new(head, "busy_window_peak",
			    win_peak >= 0 ? json_real((double)win_peak / CSAMPLE_WIN_BUCKETS)
					  : json_null());
	if (spec->n_classes) /* the classes whose sends fell behind their schedules */
		json_object_set_new(head, "classes_behind", behind);
	else
		json_decref(behind);
	json_object_set_new(head, "requested_rate", real_or_null(req_rate > 0 ? req_rate : NAN));
	json_object_set_new(head, "achieved_rate", real_or_null(ach_rate > 0 ? ach_rate : NAN));
	json_object_set_new(head, "in_flight_max", json_integer((json_int_t)in_flight_max));
	json_object_set_new(head, "queued_max", json_integer((json_int_t)queued_max));
	json_object_set_new(head, "queued_age_max_ms", json_real((double)queued_age_max / 1e6));
	json_object_set_new(head, "record_backlog_max", json_integer((json_int_t)backlog_max));
	json_object_set_new(head, "conn_errors", json_integer((json_int_t)conn_errors));
	json_object_set_new(head, "port_errors", json_integer((json_int_t)port_errors));
	json_object_set_new(head, "daemon_cpu_max", real_or_null(d_cpu_max));
	json_object_set_new(head, "daemon_ingest_backlog_max",
			    d_backlog_max >= 0 ? json_integer((json_int_t)d_backlog_max) : json_null());
	json_t *th = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "max_loop_busy",
			       max_busy, "max_busy_share", max_share, "max_lag_ms", max_lag,
			       "busy_near", BUSY_NEAR, "rate_min_fraction", RATE_MIN_FRACTION,
			       "read_inflation", READ_INFLATION, "read_lag_floor_ms",
			       READ_LAG_FLOOR_MS, "busy_window_share", BURST_WINDOW_SHARE);
	json_t *out = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:o}", "verdict", verdict,
				"reasons", reasons, "notes", notes, "headline", head, "workers", per,
				"ceiling", ceil, "allow_client_bound", spec->client.allow_client_bound,
				"thresholds", th);
	(void)daemon_samples;
	return out;
}

const char *verdict_of(json_t *summary)
{
	const char *v =
	    json_string_value(json_object_get(json_object_get(summary, "client"), "verdict"));
	return v ? v : "";
}

void verdict_host(json_t *client, json_t *summary, double wait, double steal)
{
	json_t *head = json_object_get(client, "headline");
	if (!head)
		return;
	json_object_set_new(head, "host_cpu_wait", real_or_null(wait));
	json_object_set_new(head, "host_steal", real_or_null(steal));
	const char *v = json_string_value(json_object_get(client, "verdict"));
	double lag_p99 = metric(summary, "schedule_lag", "p99");
	int late = isfinite(lag_p99) && lag_p99 > LATE_NOTE_MS;
	if (!v || (strcmp(v, "ok") == 0 && !late))
		return;
	json_t *notes = json_object_get(client, "notes");
	if (isfinite(wait) && wait > HOST_WAIT_NOTE)
		reason(notes, "host_contended", -1, wait, HOST_WAIT_NOTE,
		       "runnable tasks of this host waited for a CPU %.0f%% of the run "
		       "(/proc/pressure/cpu): other processes competed with the workers",
		       wait * 100);
	if (isfinite(steal) && steal > HOST_STEAL_NOTE)
		reason(notes, "host_steal", -1, steal, HOST_STEAL_NOTE,
		       "the hypervisor ran something else on this host's CPUs for %.1f%% of their "
		       "time during the run (/proc/stat steal): the workers stalled while it did",
		       steal * 100);
}

long long host_cpu_pressure_us(void)
{
	FILE *f = fopen("/proc/pressure/cpu", "r");
	if (!f)
		return -1;
	char line[256];
	long long us = -1;
	if (fgets(line, sizeof line, f) && strncmp(line, "some ", 5) == 0) {
		const char *t = strstr(line, "total=");
		if (t)
			us = strtoll(t + 6, NULL, 10);
	}
	fclose(f);
	return us;
}

int host_cpu_steal(long long *steal, long long *total)
{
	*steal = *total = -1;
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	char line[512];
	int rc = -1;
	/* cpu  user nice system idle iowait irq softirq steal guest guest_nice;
	 * guest time is already counted in user and nice */
	unsigned long long v[8];
	if (fgets(line, sizeof line, f) && strncmp(line, "cpu ", 4) == 0 &&
	    sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) == 8) {
		unsigned long long t = 0;
		for (int i = 0; i < 8; i++)
			t += v[i];
		if (t <= (unsigned long long)LLONG_MAX) {
			*steal = (long long)v[7];
			*total = (long long)t;
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}
