/* runner.c - executes runs one at a time: the runner thread, and a run's
 * life (prepare, launch, drive, and one way out: its workers stopped, what
 * it took given back, then its end recorded by conclude). The parts it
 * drives are listed in runner_int.h. */
#include "runner.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "calibrate.h"
#include "card.h"
#include "client.h"
#include "datasets.h"
#include "disk.h"
#include "history.h"
#include "judge.h"
#include "live.h"
#include "log.h"
#include "runner_int.h"
#include "runs.h"
#include "selfmet.h"
#include "summary.h"
#include "sweep.h"
#include "telemetry.h"
#include "util.h"
#include "verdict.h"

/* --- helpers ------------------------------------------------------------------ */

void fail_run(struct run_ctx *c, const char *fmt, ...)
{
	if (c->fail_reason)
		return;
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	c->fail_reason = xstrdup(buf);
}

static void release_datasets(struct run_ctx *c)
{
	for (int k = 0; k < HR_MAX_CLASSES; k++)
		if (c->have_ds[k]) {
			dataset_ref_release(&c->ds[k]);
			c->have_ds[k] = 0;
		}
}

static int open_socket(struct run_ctx *c)
{
	c->sock = zmq_socket(c->r->zctx, ZMQ_ROUTER);
	proto_socket_defaults(c->sock);
	int one = 1;
	zmq_setsockopt(c->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
	if (strcmp(c->r->o.transport, "tcp") == 0) {
		if (zmq_bind(c->sock, "tcp://127.0.0.1:*") < 0)
			goto err;
		size_t len = sizeof c->endpoint;
		zmq_getsockopt(c->sock, ZMQ_LAST_ENDPOINT, c->endpoint, &len);
		return 0;
	}
	snprintf(c->sockpath, sizeof c->sockpath, "%s/run-%lld.sock", c->r->o.data_dir,
	         (long long)c->id);
	if (strlen(c->sockpath) > 100) /* sun_path is short */
		snprintf(c->sockpath, sizeof c->sockpath, "/tmp/headroom-%d-run-%lld.sock",
		         (int)getpid(), (long long)c->id);
	unlink(c->sockpath);
	snprintf(c->endpoint, sizeof c->endpoint, "ipc://%s", c->sockpath);
	if (zmq_bind(c->sock, c->endpoint) < 0)
		goto err;
	return 0;
err:
	fail_run(c, "cannot bind the worker socket: %s", zmq_strerror(zmq_errno()));
	return -1;
}

/* Stores a run's final state. The store may be failing (a full disk):
 * a few tries, then one without the summary (the smaller write); if none
 * is taken the runner keeps retrying the state alone (runner_main) and
 * takes no other run meanwhile, and a daemon stopped before that
 * recovers the run at its next start (runner_recover). */
static int finish_run(struct runner *r, int64_t id, const char *state, const char *reason,
                      json_t *summary)
{
	char err[HR_ERRLEN];
	for (int attempt = 0; attempt < 4; attempt++) {
		if (runs_finish(r->store, id, state, reason, attempt < 3 ? summary : NULL, err) ==
		    0) {
			live_end(id, state); /* the live streams end with the store's state */
			return 0;
		}
		hlog(LOG_ERROR, "runner", "run %lld: cannot store its end (%s): %s\n",
		     (long long)id, state, err);
		struct timespec ts = {0, 200000000};
		nanosleep(&ts, NULL);
	}
	live_end(id, state);
	r->unfinished_id = id;
	snprintf(r->unfinished_state, sizeof r->unfinished_state, "%s", state);
	free(r->unfinished_reason);
	r->unfinished_reason = reason ? xstrdup(reason) : NULL;
	return -1;
}

/* Retries a final state the store did not take. Returns 1 while one is
 * still pending. */
static int retry_unfinished(struct runner *r)
{
	if (!r->unfinished_id)
		return 0;
	char err[HR_ERRLEN];
	if (runs_finish(r->store, r->unfinished_id, r->unfinished_state, r->unfinished_reason, NULL,
	                err) < 0)
		return 1;
	hlog(LOG_INFO, "runner", "run %lld %s (stored late, without its summary)\n",
	     (long long)r->unfinished_id, r->unfinished_state);
	r->unfinished_id = 0;
	free(r->unfinished_reason);
	r->unfinished_reason = NULL;
	return 0;
}

/* A run ended, however: the calibration or sweep it belongs to (if any)
 * takes its next step. */
static void run_ended(struct runner *r, int64_t id, json_t *spec_json)
{
	calib_run_finished(r->store, id, spec_json);
	sweep_run_finished(r->store, id);
}

/* The wait for the telemetry baseline ends early on a cancel or a stop. */
static int baseline_give_up(void *ud)
{
	struct run_ctx *c = ud;
	return atomic_load(&c->r->cancel_id) == c->id || atomic_load(&c->r->stopping);
}

/* --- a run's life: prepare, launch, drive, end (conclude) ---------------------- */

/* Everything a run needs before its workers: room on the disk, its own
 * headroom-mock (target.mock, the run's or a class's) with the address put
 * in the spec the workers get, that spec parsed, the datasets referenced
 * and the API key resolved. 0, or -1 with why; what was taken is given
 * back by end_run. */
static int prepare(struct run_ctx *c, json_t *spec_json, char *why)
{
	struct mockproc *mock = &c->mock;
	struct runner *r = c->r;
	struct spec_error serr;
	char err[HR_ERRLEN];
	if (disk_check_floor(why) < 0 || disk_reserve_make(why) < 0)
		return -1;
	if (r->o.allow)
		c->net = *r->o.allow;
	json_t *run_json = json_incref(spec_json);
	json_t *tgt = json_object_get(spec_json, "target");
	int want_mock = json_is_true(json_object_get(tgt, "mock"));
	size_t ci;
	json_t *cl;
	json_array_foreach(json_object_get(spec_json, "classes"), ci, cl) want_mock |=
	    json_is_true(json_object_get(json_object_get(cl, "target"), "mock"));
	if (want_mock) {
		/* a headroom-mock of our own for this run: the workers get its
		 * address as target.url */
		if (!r->o.mock_bin || mockproc_start(mock, r->o.mock_bin, err) < 0) {
			snprintf(why, HR_ERRLEN, "%s",
			         r->o.mock_bin ? err : "no headroom-mock to start (--mock-bin)");
			json_decref(run_json);
			return -1;
		}
		json_decref(run_json);
		run_json = json_deep_copy(spec_json);
		char url[160];
		snprintf(url, sizeof url, "http://%s", mock->addr);
		json_t *t = json_object_get(run_json, "target");
		if (json_is_true(json_object_get(t, "mock"))) {
			json_object_set_new(t, "url", json_string(url));
			json_object_del(t, "mock");
		}
		json_array_foreach(json_object_get(run_json, "classes"), ci, cl)
		{ /* a class on the run's mock (its own target.mock, or the run's) */
			t = json_object_get(cl, "target");
			if (json_is_true(json_object_get(t, "mock"))) {
				json_object_set_new(t, "url", json_string(url));
				json_object_del(t, "mock");
			}
		}
		/* the mock the daemon started is allowed, whatever the list says
		 * (a full list leaves it to the open default: no list at all) */
		if ((c->net.n > 0 || c->net.closed) && netallow_add(&c->net, mock->addr, err) < 0)
			hlog(LOG_INFO, "runner", "run %lld: %s\n", (long long)c->id, err);
		hlog(LOG_INFO, "runner", "run %lld: headroom-mock (pid %d) on %s\n",
		     (long long)c->id, (int)mock->pid, mock->addr);
	}
	if (spec_from_json(run_json, r->o.default_workers, &c->spec, &serr) < 0) {
		snprintf(why, HR_ERRLEN, "%.200s", serr.message);
		json_decref(run_json);
		return -1;
	}
	json_decref(run_json);
	/* the datasets the workers load: the run's, or each class's */
	int nds = c->spec.n_classes ? c->spec.n_classes : 1;
	for (int k = 0; k < nds; k++) {
		const struct spec *ks = c->spec.n_classes ? c->spec.classes[k].spec : &c->spec;
		if (ks->workload.kind != SPEC_WL_DATASET)
			continue;
		int dr = datasets_ref(r->store, ks->workload.dataset_id, &c->ds[k], err);
		if (dr < 0) {
			if (c->spec.n_classes)
				snprintf(why, HR_ERRLEN, "classes[%d].workload.dataset: %.200s", k,
				         dr == -404 ? "the dataset is gone" : err);
			else
				snprintf(why, HR_ERRLEN, "workload.dataset: %.200s",
				         dr == -404 ? "the dataset is gone" : err);
			return -1;
		}
		c->have_ds[k] = 1;
	}
	if ((c->spec.target.api_key_secret || c->spec.target.api_key_env) &&
	    wenv_resolve_secret(c, why) < 0)
		return -1;
	if (!c->envp)
		wenv_build(c);
	return 0;
}

/* Its workers: as many as the spec says (fewer when they would have
 * nothing to send), or as its placement asks (pool_remote.c), which then
 * supervises them. 0, or -1 with why. */
static int size_pool(struct run_ctx *c, char *why)
{
	c->n = c->spec.workers; /* with classes, spec parsing already dropped idle workers */
	if (!c->spec.n_classes && c->spec.load.mode == SPEC_LOAD_CONCURRENCY &&
	    c->spec.load.requests > 0 && c->spec.load.requests < c->n)
		c->n = (int)c->spec.load.requests; /* a worker with nothing to send is useless */
	if (c->spec.placement.given) {
		c->pool = &placed_pool;
		if (pool_place(c, why) < 0)
			return -1;
	}
	c->w = xcalloc((size_t)c->n, sizeof *c->w);
	for (int k = 0, i = c->spec.placement.local; k < c->n_picks; k++)
		for (int j = 0; j < c->picks[k].workers; j++, i++) {
			c->w[i].remote = 1;
			snprintf(c->w[i].agent, sizeof c->w[i].agent, "%s", c->picks[k].conn);
		}
	return 0;
}

/* The run begins: its card and telemetry, its socket, its workers started,
 * and the telemetry baseline waited for. A failure here (a worker that
 * cannot start, the socket) fails the run, and drive ends it. */
static void launch(struct run_ctx *c)
{
	struct runner *r = c->r;
	c->launched = 1;
	c->stored_base = atomic_load(&r->stored);
	store_commit_status(r->store, &c->commit_fails0, NULL, 0);
	c->record_fails0 = runs_record_failures(NULL, 0);
	c->started = mono_ns();
	live_begin(c->id);
	hlog(LOG_INFO, "runner", "run %lld started with %d worker(s)\n", (long long)c->id, c->n);

	/* the credibility card: the client host and the server's identity */
	c->card = card_begin(r->store, c->id, c->spec.json, &c->spec, &c->net, wenv_key(c));
	/* telemetry from before the first request (the baseline) to after the last */
	c->tele = collector_start(r->store, c->id, &c->spec, r->o.nvml_lib, &c->net);
	if (open_socket(c) == 0) {
		for (int i = 0; i < c->n; i++)
			if (c->pool->start(c, i) < 0) {
				for (int k = i; k < c->n; k++)
					c->w[k].exited = 1; /* never started */
				break;
			}
	}
	/* START is sent from drive's loop, so no request (warm-up included)
	 * precedes the baseline; the workers start up meanwhile */
	if (c->sock)
		collector_wait_baseline(c->tele, baseline_give_up, c);
}

/* The run's loop, until every worker has finished or the stop deadline
 * passed: messages, supervision, cancel and shutdown, saturation,
 * progress. */
static void drive(struct run_ctx *c)
{
	struct runner *r = c->r;
	int64_t id = c->id;
	int64_t last_progress = 0;
	while (c->sock) {
		int drained = runproto_drain(c, 100);
		c->pool->reap(c);
		int64_t now = mono_ns();
		supervise_late_exits(c, now, 0);
		/* with messages still queued the daemon is the one behind (ingestion
		 * back-pressure): a worker's heartbeat may be waiting in the queue */
		if (drained)
			supervise_silence(c, now);
		watch_daemon_sample(c, now, 0);
		watch_store(c);
		if (atomic_load(&r->cancel_id) == id && !c->cancelled) {
			c->cancelled = 1;
			runproto_stop(c, "cancelled");
		}
		if (atomic_load(&r->stopping) && !c->interrupted) {
			c->interrupted = 1;
			runproto_stop(c, "daemon stopping");
		}
		if (c->fail_reason && !c->stopping)
			runproto_stop(c, "run failed");
		watch_saturation(c, now);
		wclock_tick(c, now);
		selfmet_runner_tick();
		int alive = 0;
		for (int i = 0; i < c->n; i++)
			alive += !c->w[i].exited;
		selfmet_workers(alive);
		if (now - last_progress > PROGRESS_EVERY_NS) {
			watch_progress(c);
			last_progress = now;
		}
		if (supervise_all_finished(c))
			break;
		if (c->stopping && now > c->stop_deadline)
			break;
	}
}

/* After the workers: every record received checked against the store, the
 * summary with the client verdict, its judgement and card, and the run's
 * final state. */
static void conclude(struct run_ctx *c, json_t *spec_json)
{
	struct runner *r = c->r;
	int64_t id = c->id;
	char err[HR_ERRLEN];
	runs_sync(r->store);
	/* every record received must be in the store: count what it holds */
	watch_store(c);
	char store_why[400] = "";
	long long have = runs_count_records(r->store, id);
	if (c->store_error && disk_reserve_release())
		hlog(LOG_WARN, "runner",
		     "run %lld: released the store's %d MiB reserve for the "
		     "run's end\n",
		     (long long)id, HR_STORE_RESERVE_MB);
	if (have >= 0 && have < c->records)
		snprintf(store_why, sizeof store_why,
		         "the store could not write %lld of the %lld records received: %s",
		         c->records - have, c->records,
		         c->store_error ? c->store_error : "unknown error");
	else if (c->store_error)
		snprintf(store_why, sizeof store_why, "the store failed during the run: %s",
		         c->store_error);
	long long valid = 0;
	json_t *summary = summary_compute(r->store, id, &c->spec, c->t0_wall, &valid, err);
	if (!summary)
		hlog(LOG_ERROR, "runner", "run %lld: summary failed: %s\n", (long long)id, err);
	else
		json_object_set_new(summary, "client",
		                    verdict_compute(r->store, id, &c->spec, c->n, summary));
	if (summary) { /* what the host did: tasks waiting for a CPU, the hypervisor's steal */
		long long psi1 = host_cpu_pressure_us();
		int64_t span = mono_ns() - c->t0;
		double wait = c->psi0 >= 0 && psi1 >= c->psi0 && c->t0 && span > 0
		                  ? (double)(psi1 - c->psi0) * 1e3 / (double)span
		                  : NAN;
		long long steal1, cpu1;
		double steal = c->t0 && host_cpu_steal(&steal1, &cpu1) == 0 && c->cpu0 >= 0 &&
		                       cpu1 > c->cpu0 && steal1 >= c->steal0
		                   ? (double)(steal1 - c->steal0) / (double)(cpu1 - c->cpu0)
		                   : NAN;
		verdict_host(json_object_get(summary, "client"), summary, wait, steal);
	}
	if (summary) { /* what the schedule asked for but was never sent */
		long long unsent = 0;
		for (int i = 0; i < c->n; i++)
			unsent += c->w[i].unsent;
		json_object_set_new(json_object_get(summary, "load"), "unsent",
		                    json_integer((json_int_t)unsent));
	}
	if (summary) /* the workers' clocks against the daemon's */
		json_object_set_new(summary, "clock", wclock_json(c));
	if (summary && c->spec.placement.given)
		json_object_set_new(summary, "placement", pool_placement_json(c));
	if (summary && c->saturated) /* stopped early on purpose: say why */
		json_object_set_new(summary, "saturation",
		                    json_pack("{s:b, s:s}", "stopped", 1, "message", c->saturated));
	if (summary) {
		/* validity and gates: the run's own figures first (a regression
		 * gate against a group reads them), then the judgement */
		if (history_index_summary(r->store, id, summary, err) < 0)
			hlog(LOG_ERROR, "runner", "run %lld: cannot index the summary: %s\n",
			     (long long)id, err);
		judge_run(r->store, id, &c->spec, summary);
		/* and the judgement indexed before the state turns terminal: a
		 * reader that sees the run finished sees its validity too */
		if (history_index_summary(r->store, id, summary, err) < 0)
			hlog(LOG_ERROR, "runner", "run %lld: cannot index the summary: %s\n",
			     (long long)id, err);
	}
	card_end(r->store, id, c->card, summary); /* lengths sent, verdict, GPUs */
	const char *state = RUN_SUCCEEDED;
	char reason[600] = "";
	if (c->interrupted) {
		state = RUN_INTERRUPTED;
		snprintf(reason, sizeof reason, "the daemon was stopped during the run%s%s",
		         store_why[0] ? "; " : "", store_why);
	} else if (c->cancelled) {
		state = RUN_CANCELLED;
		snprintf(reason, sizeof reason, "cancelled by request%s%s",
		         store_why[0] ? "; " : "", store_why);
	} else if (store_why[0]) {
		state = RUN_FAILED;
		snprintf(reason, sizeof reason, "%s", store_why);
	} else if (c->fail_reason) {
		state = RUN_FAILED;
		snprintf(reason, sizeof reason, "%s", c->fail_reason);
	} else if (valid == 0) {
		state = RUN_FAILED;
		json_t *errs = summary ? json_object_get(summary, "errors") : NULL;
		char *e = errs ? json_dumps(errs, JSON_COMPACT) : NULL;
		snprintf(reason, sizeof reason, "no request succeeded (errors: %s)",
		         e ? e : "unknown");
		free(e);
	}
	if (finish_run(r, id, state, reason[0] ? reason : NULL, summary) < 0)
		hlog(LOG_ERROR, "runner", "run %lld: cannot store the result; retrying\n",
		     (long long)id);
	else if (summary && history_index_summary(r->store, id, summary, err) < 0)
		hlog(LOG_ERROR, "runner", "run %lld: cannot index the summary: %s\n", (long long)id,
		     err);
	hlog(LOG_INFO, "runner", "run %lld %s%s%s%s%s\n", (long long)id, state,
	     reason[0] ? ": " : "", reason, summary ? ", client verdict " : "",
	     summary ? verdict_of(summary) : "");
	run_ended(r, id, spec_json);
	/* a cancel request for this run is spent: ids are never reused, but
	 * the next run must not see a stale one either */
	long long want = id;
	atomic_compare_exchange_strong(&r->cancel_id, &want, 0);
	json_decref(summary);
}

/* The one way out of a run, however far it got (why: it could not start):
 * its workers stopped and judged, what the run took given back (the
 * workers' environment, the datasets, the telemetry, its mock, its
 * socket), then its end recorded: the summary and final state (conclude),
 * or the failure to start. */
static void end_run(struct run_ctx *c, json_t *spec_json, const char *why)
{
	struct runner *r = c->r;
	if (c->launched) {
		c->pool->stop(c);
		c->pool->reap(c);
		selfmet_workers(0); /* before the run's end is written: none left */
		supervise_late_exits(c, mono_ns(), 1);
	}
	wenv_forget(c);
	release_datasets(c);
	if (c->launched) {
		watch_progress(c);
		collector_stop(c->tele, c->cancelled || c->interrupted);
	}
	mockproc_stop(&c->mock);
	if (c->launched) {
		/* the daemon's last sample once every record is stored: its
		 * backlog then says whether ingestion kept up to the end */
		runs_sync(r->store);
		watch_daemon_sample(c, mono_ns(), 1);
	}
	if (c->sock)
		zmq_close(c->sock);
	if (c->sockpath[0])
		unlink(c->sockpath);

	if (c->launched) {
		conclude(c, spec_json);
	} else {
		hlog(LOG_ERROR, "runner", "run %lld failed: %s\n", (long long)c->id, why);
		finish_run(r, c->id, RUN_FAILED, why, NULL);
		run_ended(r, c->id, spec_json);
	}
	free(c->fail_reason);
	free(c->store_error);
	free(c->saturated);
	free(c->sat);
	json_decref(c->lost);
	json_decref(c->files);
	if (c->w)
		for (int i = 0; i < c->n; i++)
			free(c->w[i].bursts);
	free(c->w);
	spec_release(&c->spec);
}

static void execute(struct runner *r, int64_t id, json_t *spec_json)
{
	struct run_ctx c = {.r = r, .id = id, .pool = &local_pool, .mock = {.pid = -1, .out = -1}};
	char why[HR_ERRLEN];
	if (prepare(&c, spec_json, why) == 0 && size_pool(&c, why) == 0) {
		launch(&c);
		drive(&c);
	}
	end_run(&c, spec_json, why);
}

/* Retention after a run (runner_opts.retain_*). */
static void retain(struct runner *r)
{
	char err[HR_ERRLEN];
	int n = history_retain(r->store, r->o.retain_days, r->o.retain_per_fp, err);
	if (n < 0)
		hlog(LOG_ERROR, "runner", "retention failed: %s\n", err);
	else if (n > 0)
		hlog(LOG_INFO, "runner", "retention removed %d run(s)\n", n);
}

/* A repeat group's pause between its runs (repeat.cooldown_s) after run
 * id, when another run of the group is queued (never after its last); the
 * daemon stopping cuts it short. */
static void cooldown(struct runner *r, int64_t id, double seconds)
{
	if (runs_group_queued(r->store, id) <= 0)
		return;
	/* in slices of a second, so that the runner shows it is alive */
	int64_t end = mono_ns() + ns_of_s(seconds);
	pthread_mutex_lock(&r->mu);
	while (!atomic_load(&r->stopping) && mono_ns() < end) {
		selfmet_runner_tick();
		int64_t left = end - mono_ns();
		if (left > 1000000000LL)
			left = 1000000000LL;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(left > 0 ? left : 0);
		while (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	}
	pthread_mutex_unlock(&r->mu);
}

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	pthread_mutex_lock(&r->mu); /* no run before the allow-list is complete */
	while (!r->allow_ready && !atomic_load(&r->stopping))
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	while (!atomic_load(&r->stopping)) {
		selfmet_runner_tick();
		selfmet_workers(0);
		int64_t id;
		json_t *spec = NULL;
		char err[HR_ERRLEN];
		int rc = retry_unfinished(r) ? 0 : runs_claim_next(r->store, &id, &spec, err);
		if (rc < 0)
			hlog(LOG_ERROR, "runner", "cannot take the next run: %s\n", err);
		if (rc == 1) {
			execute(r, id, spec);
			double cool = json_number_value(
			    json_object_get(json_object_get(spec, "repeat"), "cooldown_s"));
			json_decref(spec);
			retain(r);
			if (cool > 0)
				cooldown(r, id, cool);
			continue;
		}
		pthread_mutex_lock(&r->mu);
		if (!r->kicked && !atomic_load(&r->stopping)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		}
		r->kicked = 0;
		pthread_mutex_unlock(&r->mu);
	}
	retry_unfinished(r); /* else the next start recovers it */
	return NULL;
}

/* The workers a run of this spec gets (execute). */
static int run_workers(const struct spec *sp)
{
	int n = sp->workers;
	if (sp->load.mode == SPEC_LOAD_CONCURRENCY && sp->load.requests > 0 &&
	    sp->load.requests < n)
		n = (int)sp->load.requests;
	return n;
}

int runner_recover(struct store *s, int default_workers, char *err)
{
	json_t *list;
	if (runs_list_running(s, &list, err) < 0)
		return -1;
	static const char reason[] = "the daemon stopped while the run was running";
	size_t i;
	json_t *it;
	int n = 0;
	json_array_foreach(list, i, it)
	{
		int64_t id = json_integer_value(json_object_get(it, "id"));
		json_t *spec_json = json_object_get(it, "spec");
		struct spec sp;
		struct spec_error se;
		char why[HR_ERRLEN];
		json_t *summary = NULL;
		/* the summary from the records that were committed, as at the
		 * end of a run (execute), less what only the runner knew (the
		 * workers' unsent arrivals) */
		if (json_is_object(spec_json) &&
		    spec_from_json(spec_json, default_workers, &sp, &se) == 0) {
			int64_t t0 = runs_t0_wall(s, id);
			long long valid = 0;
			summary = summary_compute(s, id, &sp, t0 > 0 ? t0 : 0, &valid, why);
			if (!summary) {
				hlog(LOG_ERROR, "runner", "run %lld: summary failed: %s\n",
				     (long long)id, why);
			} else {
				json_object_set_new(
				    summary, "client",
				    verdict_compute(s, id, &sp, run_workers(&sp), summary));
				if (history_index_summary(s, id, summary, why) < 0)
					hlog(LOG_ERROR, "runner",
					     "run %lld: cannot index the "
					     "summary: %s\n",
					     (long long)id, why);
				judge_run(s, id, &sp, summary);
			}
			spec_release(&sp);
		} else {
			hlog(LOG_INFO, "runner", "run %lld: its stored spec does not parse%s%s\n",
			     (long long)id, json_is_object(spec_json) ? ": " : "",
			     json_is_object(spec_json) ? se.message : "");
		}
		if (runs_finish(s, id, RUN_INTERRUPTED, reason, summary, why) < 0) {
			hlog(LOG_ERROR, "runner", "run %lld: cannot store its end: %s\n",
			     (long long)id, why);
		} else {
			if (summary && history_index_summary(s, id, summary, why) < 0)
				hlog(LOG_ERROR, "runner",
				     "run %lld: cannot index the summary: %s\n", (long long)id,
				     why);
			n++;
		}
		json_decref(summary);
	}
	json_decref(list);
	return n;
}

/* ipc sockets a daemon that crashed left in the data directory (the ones
 * of a run that ended are unlinked then) */
static void remove_stale_sockets(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "run-", 4) != 0 || len < 9 ||
		    strcmp(e->d_name + len - 5, ".sock") != 0)
			continue;
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) == 0)
			hlog(LOG_INFO, "runner", "removed the stale socket %s\n", path);
	}
	closedir(d);
}

int runner_start(struct store *s, const struct runner_opts *o, struct runner **out, char *err)
{
	struct runner *r = xcalloc(1, sizeof *r);
	r->store = s;
	r->o = *o;
	r->allow_ready = !o->allow;
	if (!r->o.transport)
		r->o.transport = "ipc";
	if (r->o.data_dir)
		remove_stale_sockets(r->o.data_dir);
	r->zctx = zmq_ctx_new();
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	atomic_init(&r->stopping, 0);
	atomic_init(&r->cancel_id, 0);
	/* alive from its start: readiness (GET /readyz) is asked as soon as
	 * the daemon says it is ready, maybe before the thread's first tick */
	selfmet_runner_tick();
	if (pthread_create(&r->thread, NULL, runner_main, r) != 0) {
		zmq_ctx_term(r->zctx);
		free(r);
		return errf(err, "cannot start the runner thread");
	}
	*out = r;
	return 0;
}

void runner_allow_ready(struct runner *r)
{
	pthread_mutex_lock(&r->mu);
	r->allow_ready = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void runner_kick(struct runner *r)
{
	pthread_mutex_lock(&r->mu);
	r->kicked = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void runner_cancel(struct runner *r, int64_t id)
{
	atomic_store(&r->cancel_id, id);
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	atomic_store(&r->stopping, 1);
	runner_kick(r);
	pthread_join(r->thread, NULL);
	zmq_ctx_term(r->zctx);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->unfinished_reason);
	free(r);
}
