/* runwatch.c - what the runner watches while a run goes, besides its
 * workers: the daemon's own sample and the ingest backlog (client.h), the
 * saturation detector (load.stop_on_saturation, satdet.h), the progress
 * the API and the live streams show, and store failures. */
#include <stdatomic.h>
#include <stdlib.h>

#include "client.h"
#include "live.h"
#include "log.h"
#include "runner_int.h"
#include "runs.h"
#include "satdet.h"
#include "store.h"
#include "util.h"

/* Ingest backlog: a marker job behind each record batch counts it as
 * stored once the writer reaches it (jobs run in order). */
struct stored_mark {
	atomic_llong *counter;
	long long n;
};

static int stored_job(struct store_tx *tx, void *arg, char *err)
{
	struct stored_mark *m = arg;
	atomic_fetch_add(m->counter, m->n);
	(void)tx;
	(void)err;
	return 0;
}

void watch_count_stored(struct run_ctx *c, long long n)
{
	struct stored_mark *m = xmalloc(sizeof *m);
	m->counter = &c->r->stored;
	m->n = n;
	store_post(c->r->store, stored_job, m, free);
}

/* The daemon's own sample, once a second from t0 on: its CPU (every
 * thread: API, store writer, this runner, telemetry) and the records
 * received but not yet stored. */
void watch_daemon_sample(struct run_ctx *c, int64_t now, int force)
{
	if (!c->t0 || now < c->t0)
		return;
	if (!c->last_sample) {
		c->last_sample = now;
		c->last_cpu = process_cpu_ns();
		c->next_sample = now + HR_CLIENT_SAMPLE_NS;
		return;
	}
	if ((!force && now < c->next_sample) || now <= c->last_sample)
		return;
	int64_t cpu = process_cpu_ns();
	struct dsample d = {
	    .t_ns = now - c->t0,
	    .interval_ns = now - c->last_sample,
	    .cpu = (double)(cpu - c->last_cpu) / (double)(now - c->last_sample),
	    .backlog = c->records - (atomic_load(&c->r->stored) - c->stored_base),
	};
	if (d.backlog < 0)
		d.backlog = 0;
	for (int i = 0; i < c->n; i++) {
		d.in_flight += c->w[i].in_flight;
		d.sent += c->w[i].sent;
		d.completed += c->w[i].completed;
	}
	client_store_daemon(c->r->store, c->id, &d);
	c->last_sample = now;
	c->last_cpu = cpu;
	c->next_sample += HR_CLIENT_SAMPLE_NS;
	if (c->next_sample <= now)
		c->next_sample = now + HR_CLIENT_SAMPLE_NS;
}

static struct satdet *sat_of(struct run_ctx *c)
{
	if (!c->sat) {
		c->sat = xmalloc(sizeof *c->sat);
		satdet_init(c->sat);
	}
	return c->sat;
}

/* Completed profiling requests for the saturation detector: their time to
 * first token (or latency), at their completion on the phase's clock. */
void watch_sat_records(struct run_ctx *c, const struct hr_record *recs, size_t n)
{
	struct satdet *d = sat_of(c);
	double base = (double)(c->prof_start - c->t0);
	for (size_t k = 0; k < n; k++) {
		const struct hr_record *r = &recs[k];
		if (r->phase != HR_PHASE_PROFILING || r->start_ns == HR_NO_TIME ||
		    r->done_ns == HR_NO_TIME)
			continue;
		int64_t first = r->n_chunks ? r->chunk_ns[0] : r->end_ns;
		if (first == HR_NO_TIME)
			continue;
		satdet_done(d, ((double)r->done_ns - base) / 1e9,
		            (double)(first - r->start_ns) / 1e6);
	}
}

/* Every 250 ms of the profiling phase: the requests in flight, and the
 * verdict; an oversaturated run is stopped (load.stop_on_saturation). */
#define SAT_EVERY_NS 250000000LL
void watch_saturation(struct run_ctx *c, int64_t now)
{
	if (!c->spec.stop_on_saturation || !c->prof_start || c->stopping || now < c->prof_start ||
	    now - c->last_sat < SAT_EVERY_NS)
		return;
	sat_of(c);
	c->last_sat = now;
	long long in_flight = 0;
	for (int i = 0; i < c->n; i++)
		in_flight += c->w[i].in_flight;
	satdet_inflight(c->sat, (double)(now - c->prof_start) / 1e9, (double)in_flight);
	char why[400];
	if (satdet_check(c->sat, why, sizeof why)) {
		hlog(LOG_INFO, "runner", "run %lld stopped: %s\n", (long long)c->id, why);
		c->saturated = xstrdup(why);
		runproto_stop(c, "oversaturated");
	}
}

/* The run's progress: the workers' counters summed, stored with the run
 * and streamed live. */
void watch_progress(struct run_ctx *c)
{
	long long sent = 0, completed = 0, errors = 0, in_flight = 0;
	for (int i = 0; i < c->n; i++) {
		sent += c->w[i].sent;
		completed += c->w[i].completed;
		errors += c->w[i].errors;
		in_flight += c->w[i].in_flight;
	}
	json_t *p = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:i}", "phase",
	                      !c->t0         ? "starting"
	                      : c->profiling ? "profiling"
	                                     : "warmup",
	                      "sent", (json_int_t)sent, "completed", (json_int_t)completed,
	                      "errors", (json_int_t)errors, "in_flight", (json_int_t)in_flight,
	                      "records", (json_int_t)c->records, "workers", c->n);
	runs_set_progress(c->r->store, c->id, p);
	json_decref(p);
	live_progress(c->id,
	              !c->t0         ? "starting"
	              : c->profiling ? "profiling"
	                             : "warmup",
	              sent, completed, errors, in_flight, c->records, c->n);
}

/* A store failure since the run began (a failed commit, a record batch
 * that could not be inserted): noted once, and the run is stopped, since
 * what it measures from then on is not kept. */
void watch_store(struct run_ctx *c)
{
	if (c->store_error)
		return;
	char msg[160];
	long long cf = 0;
	store_commit_status(c->r->store, &cf, msg, sizeof msg);
	if (cf > c->commit_fails0 || runs_record_failures(msg, sizeof msg) > c->record_fails0) {
		c->store_error = xstrdup(msg[0] ? msg : "unknown error");
		hlog(LOG_ERROR, "runner", "run %lld: the store failed: %s; stopping the run\n",
		     (long long)c->id, c->store_error);
		runproto_stop(c, "the store failed");
	}
}
