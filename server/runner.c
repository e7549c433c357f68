/* runner.c - executes runs one at a time with a pool of worker processes. */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "agents.h"
#include "calibrate.h"
#include "card.h"
#include "live.h"
#include "log.h"
#include "sweep.h"
#include "satdet.h"
#include "selfmet.h"
#include "client.h"
#include "clocksync.h"
#include "csample.h"
#include "datasets.h"
#include "disk.h"
#include "history.h"
#include "judge.h"
#include "hrlimits.h"
#include "mockproc.h"
#include "nvml.h"
#include "proto.h"
#include "runs.h"
#include "share.h"
#include "spec.h"
#include "summary.h"
#include "telemetry.h"
#include "util.h"
#include "verdict.h"

extern char **environ;

#define STOP_GRACE_NS 3000000000LL   /* after STOP, how long workers get to finish */
#define START_LEAD_NS 50000000LL     /* t0 is this far after the last READY */
#define PROGRESS_EVERY_NS 500000000LL
/* the clock exchanges (lib/clocksync.h): a burst before a worker's
 * SCHEDULE, then one every CLOCK_EVERY_NS through the run; an answer
 * later than CLOCK_WAIT_NS is given up */
#define CLOCK_FIRST 16
#define CLOCK_BURST 8
#define CLOCK_EVERY_NS 5000000000LL
#define CLOCK_WAIT_NS 500000000LL
#define CLOCK_MAX_BURSTS 720

struct runner {
	struct store *store;
	struct runner_opts o;
	void *zctx;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int kicked;
	int allow_ready; /* runner_allow_ready was called (or o.allow is NULL) */
	atomic_int stopping;
	atomic_llong cancel_id;
	atomic_llong stored; /* records written by the store (all runs) */
	/* a run whose final state the store could not take: retried until it
	 * does (runner_main), so that it does not stay 'running' */
	int64_t unfinished_id;
	char unfinished_state[16];
	char *unfinished_reason;
};

enum wstate { W_SPAWNED, W_HELLO, W_READY, W_DONE };

struct wk {
	pid_t pid;
	int state;
	int exited; /* reaped */
	int64_t exit_grace; /* clean exit reaped before its DONE arrived: wait until then */
	int warm_done; /* sent PHASE_DONE for the warm-up */
	int status; /* wait status */
	int64_t last_seen;
	long long sent, completed, errors, in_flight, records;
	long long unsent; /* DONE: arrivals never sent (the ceiling held them past the end) */
	/* its clock (lib/clocksync.h, docs/client.md "One clock"): a worker
	 * whose HELLO said "clock" answers CLOCK exchanges, a burst before its
	 * SCHEDULE and more through the run */
	int clock, synced;      /* it answers; its first burst is over */
	int pending, left, n_ex; /* an exchange awaits its answer; to go and made in this burst */
	int64_t seq, sent_t1, last_burst;
	struct clock_sample ex[CLOCK_FIRST];
	struct clock_est est;   /* the latest burst's estimate */
	struct clock_est *bursts; /* every burst's, for the drift */
	int64_t last_at;          /* daemon time of the last burst's estimate */
	int nb;
	int64_t t0_sent;        /* the time zero its first START carried, on its clock */
	/* placement (docs/agents.md): a worker on an agent (pid 0 here) */
	int remote, lost;
	char agent[AGENT_NAME_MAX + 1];
};

struct pool_ops;

struct run_ctx {
	struct runner *r;
	int64_t id;
	const struct pool_ops *pool; /* how its workers are started and stopped */
	struct spec spec;
	void *sock;
	char endpoint[300];
	char sockpath[256]; /* ipc file to unlink, "" for tcp */
	int n;
	struct wk *w;
	int64_t started, t0, t0_wall;
	long long psi0; /* the host's CPU pressure total at time zero (us), -1: none */
	long long steal0, cpu0; /* the host's steal and CPU time at time zero (ticks), -1: none */
	int profiling; /* the profiling phase has started (after any warm-up) */
	int stopping;          /* STOP sent */
	int64_t stop_deadline;
	char *fail_reason;     /* first failure wins */
	int cancelled, interrupted;
	long long records;
	long long stored_base; /* runner.stored when the run began */
	/* workload.kind dataset: the file the workers load; one per class
	 * (ds[k] for class k) with spec.classes, else ds[0] */
	struct dataset_ref ds[HR_MAX_CLASSES];
	int have_ds[HR_MAX_CLASSES];
	char **envp;           /* workers' environment: the daemon's pid, any API key */
	char *key_var;         /* the entry of envp holding the key (wiped at the end) */
	char parent_var[48];   /* PARENT_ENV=<the daemon's pid> */
	/* store failures seen when the run began (store_commit_status,
	 * runs_record_failures): more at the end means lost writes */
	long long commit_fails0, record_fails0;
	char *store_error;     /* the first store failure during the run */
	/* the daemon's own sample (client.h) */
	int64_t next_sample, last_sample, last_cpu;
	/* the targets allowed: the operator's list, plus target.mock's own
	 * mock (docs/security.md, "Targets") */
	struct netallow net;
	/* load.stop_on_saturation: the detector, when the profiling phase
	 * began (mono ns), and why the run was stopped (satdet.h) */
	struct satdet *sat;
	int64_t prof_start, last_sat;
	char *saturated;
	/* placement: the agents chosen, and the workers lost with one */
	struct agent_pick picks[HR_MAX_WORKERS];
	int n_picks;
	json_t *lost;
	json_t *files; /* what agents may fetch: {path: SHA-256} (datasets, tokenizer) */
};

/* --- helpers ------------------------------------------------------------------ */

static void fail_run(struct run_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail_run(struct run_ctx *c, const char *fmt, ...)
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

static void describe_exit(char *buf, size_t n, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, n, "ended (wait status %d)", status);
}

static int ident_index(const struct run_ctx *c, const char *ident)
{
	if (ident[0] != 'w' || !ident[1])
		return -1;
	char *end;
	long i = strtol(ident + 1, &end, 10);
	if (*end || i < 0 || i >= c->n)
		return -1;
	return (int)i;
}

/* A control message to worker i (its routing id "w<i>", worker/main.c). */
static int send_to(struct run_ctx *c, int i, int type, json_t *o, int flags)
{
	char id[16];
	snprintf(id, sizeof id, "w%d", i);
	return proto_send_json(c->sock, id, type, o, flags);
}

static void send_stop(struct run_ctx *c, const char *reason)
{
	if (c->stopping)
		return;
	c->stopping = 1;
	c->stop_deadline = mono_ns() + STOP_GRACE_NS;
	json_t *m = json_pack("{s:s}", "reason", reason);
	for (int i = 0; i < c->n; i++) {
		if (c->w[i].state >= W_HELLO && c->w[i].state != W_DONE && !c->w[i].exited)
			send_to(c, i, PROTO_STOP, m, ZMQ_DONTWAIT);
	}
	json_decref(m);
}

static void release_datasets(struct run_ctx *c)
{
	for (int k = 0; k < HR_MAX_CLASSES; k++)
		if (c->have_ds[k]) {
			dataset_ref_release(&c->ds[k]);
			c->have_ds[k] = 0;
		}
}

static int spawn_worker(struct run_ctx *c, int i)
{
	char idx[16];
	snprintf(idx, sizeof idx, "%d", i);
	/* --worker-prefix: its words, then the worker's own command */
	char prefix[1100] = "", *argv[40];
	int na = 0;
	if (c->r->o.worker_prefix) {
		snprintf(prefix, sizeof prefix, "%s", c->r->o.worker_prefix);
		char *save = NULL;
		for (char *t = strtok_r(prefix, " \t", &save); t && na < 32;
		     t = strtok_r(NULL, " \t", &save))
			argv[na++] = t;
	}
	const char *prog = na ? argv[0] : c->r->o.worker_bin;
	char *self = na ? (char *)c->r->o.worker_bin : (char *)"headroom-worker";
	argv[na++] = self;
	argv[na++] = (char *)"--connect";
	argv[na++] = c->endpoint;
	argv[na++] = (char *)"--index";
	argv[na++] = idx;
	argv[na] = NULL;
	pid_t pid;
	int rc = c->r->o.worker_prefix ? posix_spawnp(&pid, prog, NULL, NULL, argv, c->envp)
				       : posix_spawn(&pid, prog, NULL, NULL, argv, c->envp);
	if (rc != 0) {
		fail_run(c, "cannot start %s: %s", prog, strerror(rc));
		return -1;
	}
	c->w[i].pid = pid;
	c->w[i].state = W_SPAWNED;
	c->w[i].last_seen = mono_ns();
	runs_worker_update(c->r->store, c->id, i, pid, 0, 0, "started", -1, NULL);
	return 0;
}

#define SECRET_MAX_BYTES 4096
#define SECRET_ENV "HEADROOM_TARGET_API_KEY"
#define PARENT_ENV "HEADROOM_PARENT_PID" /* worker/main.c: die with this process */

/* The workers' environment (docs/security.md#secrets): never the
 * daemon's whole one, which may hold anything; only the variables that
 * say how to run (PATH, HOME, TMPDIR, TZ, LANG, LC_*), the HEADROOM_*
 * ones a worker reads, the sanitizers' settings, PARENT_ENV (a worker
 * sets PR_SET_PDEATHSIG and checks its parent is still this process) and
 * the API key when there is one. */
static int env_kept(const char *e)
{
	static const char *const exact[] = {"PATH=", "HOME=", "TMPDIR=", "TZ=", "LANG=",
					    "LANGUAGE=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=",
					    "LSAN_OPTIONS=", "HEADROOM_WORKER_JSON=",
					    "HEADROOM_WORKER_BURN_US=", "HEADROOM_WORKER_SPIN_US=",
					    "HEADROOM_WORKER_TRANSPORT=",
					    HR_NVML_ENV_LIB "="};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (strncmp(e, exact[i], strlen(exact[i])) == 0)
			return 1;
	return strncmp(e, "LC_", 3) == 0;
}

static void build_env(struct run_ctx *c)
{
	size_t ne = 0;
	while (environ[ne])
		ne++;
	c->envp = xcalloc(ne + 3, sizeof *c->envp);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (env_kept(environ[i]))
			c->envp[k++] = environ[i];
	snprintf(c->parent_var, sizeof c->parent_var, "%s=%d", PARENT_ENV, (int)getpid());
	c->envp[k++] = c->parent_var;
	if (c->key_var)
		c->envp[k++] = c->key_var;
}

/* target.api_key_secret: a secret the operator declared (secrets.h),
 * whose hosts must include target.url's (checked at submission, and here
 * again: the declarations may have changed since). Its value goes to the
 * workers in their environment, as SECRET_ENV, which the spec they get
 * names as target.api_key_env. The stored spec keeps only the name.
 * A spec that names target.api_key_env itself (queued by an older
 * daemon) fails: only declared secrets reach a target.
 * Returns 0 or -1 with err. */
static int resolve_secret(struct run_ctx *c, char *err)
{
	json_t *t = json_object_get(c->spec.json, "target");
	if (c->spec.target.api_key_env)
		return errf(err, "target.api_key_env: API keys come from declared secrets only: "
				 "name one as 'target.api_key_secret'");
	const char *name = c->spec.target.api_key_secret;
	char msg[400];
	if (secrets_allow(c->r->o.secrets, name,
			  json_string_value(json_object_get(t, "url")), msg, sizeof msg) < 0)
		return errf(err, "%s", msg);
	char buf[SECRET_MAX_BYTES + 1];
	if (secrets_read(c->r->o.secrets, name, buf, sizeof buf, msg, sizeof msg) < 0)
		return errf(err, "%s", msg);
	free(c->envp);
	c->envp = NULL;
	c->key_var = xasprintf("%s=%s", SECRET_ENV, buf);
	explicit_bzero(buf, sizeof buf);
	build_env(c);
	json_object_del(t, "api_key_secret");
	json_object_set_new(t, "api_key_env", json_string(SECRET_ENV));
	return 0;
}

static void forget_secret(struct run_ctx *c)
{
	if (c->key_var) {
		explicit_bzero(c->key_var, strlen(c->key_var));
		free(c->key_var);
	}
	free(c->envp);
	c->envp = NULL;
	c->key_var = NULL;
}

/* --- message handling ------------------------------------------------------------ */

/* START for the current phase; phase_start is ns since t0. Each worker
 * gets time zero on its own clock: the daemon's t0 plus its measured
 * offset (the same value for every phase). */
static void send_start(struct run_ctx *c, int64_t phase_start)
{
	for (int k = 0; k < c->n; k++) {
		struct wk *w = &c->w[k];
		if (w->exited || w->state == W_DONE)
			continue;
		if (!w->t0_sent)
			w->t0_sent = c->t0 + (w->est.ok ? w->est.offset_ns : 0);
		json_t *st = json_pack("{s:I, s:I, s:s, s:I}", "t0_mono_ns", (json_int_t)w->t0_sent,
				       "t0_wall_ns", (json_int_t)c->t0_wall, "phase",
				       c->profiling ? "profiling" : "warmup", "phase_start_ns",
				       (json_int_t)phase_start);
		send_to(c, k, PROTO_START, st, 0);
		json_decref(st);
	}
}

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

static void count_stored(struct run_ctx *c, long long n)
{
	struct stored_mark *m = xmalloc(sizeof *m);
	m->counter = &c->r->stored;
	m->n = n;
	store_post(c->r->store, stored_job, m, free);
}

/* The daemon's own sample, once a second from t0 on: its CPU (every
 * thread: API, store writer, this runner, telemetry) and the records
 * received but not yet stored. */
static void daemon_sample(struct run_ctx *c, int64_t now, int force)
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

static void sat_records(struct run_ctx *c, const struct hr_record *recs, size_t n)
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
static void sat_tick(struct run_ctx *c, int64_t now)
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
		send_stop(c, "oversaturated");
	}
}

static void maybe_start(struct run_ctx *c);

/* The SCHEDULE message for worker i (share.c). */
static void send_schedule(struct run_ctx *c, int i)
{
	struct share_in in = {.run_id = c->id, .spec = &c->spec, .workers = c->n, .net = &c->net};
	for (int k = 0; k < HR_MAX_CLASSES; k++)
		in.ds[k] = c->have_ds[k] ? &c->ds[k] : NULL;
	json_t *sched = share_schedule(&in, i);
	send_to(c, i, PROTO_SCHEDULE, sched, 0);
	json_decref(sched);
}

/* --- the clock (lib/clocksync.h) ---------------------------------------------- */

static void clock_send(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	w->seq++;
	w->pending = 1;
	w->sent_t1 = mono_ns();
	json_t *o = json_pack("{s:I, s:I}", "seq", (json_int_t)w->seq, "t1", (json_int_t)w->sent_t1);
	send_to(c, i, PROTO_CLOCK, o, 0);
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
		if (!c->stopping)
			send_schedule(c, i);
		maybe_start(c);
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

/* Answers given up; a burst every CLOCK_EVERY_NS while the run goes. */
static void clock_tick(struct run_ctx *c, int64_t now)
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
static json_t *clock_json(const struct run_ctx *c)
{
	json_t *ws = json_array();
	int64_t max_bound = -1;
	int measured = 0;
	for (int i = 0; i < c->n; i++) {
		const struct wk *w = &c->w[i];
		if (!w->clock || !w->est.ok) {
			json_array_append_new(ws, json_pack("{s:i, s:b}", "worker", i, "measured", 0));
			continue;
		}
		measured++;
		double drift = clock_drift_ppm(w->bursts, (size_t)w->nb);
		/* the kept estimate's bound as of the last burst */
		int64_t bound = w->est.bound_ns + clock_stale_ns(w, w->last_at);
		if (bound > max_bound)
			max_bound = bound;
		json_array_append_new(
		    ws, json_pack("{s:i, s:b, s:I, s:I, s:I, s:i, s:o}", "worker", i, "measured", 1,
				  "offset_ns", (json_int_t)w->est.offset_ns, "bound_ns",
				  (json_int_t)bound, "delay_ns", (json_int_t)w->est.delay_ns,
				  "bursts", w->nb, "drift_ppm",
				  isnan(drift) ? json_null() : json_real(drift)));
	}
	return json_pack("{s:s, s:i, s:i, s:f, s:o, s:i, s:o}", "method", "minimum delay",
			 "exchanges_first", CLOCK_FIRST, "exchanges_later", CLOCK_BURST, "every_s",
			 (double)CLOCK_EVERY_NS / 1e9, "max_bound_ns",
			 max_bound >= 0 ? json_integer((json_int_t)max_bound) : json_null(),
			 "measured", measured, "workers", ws);
}

/* One handler per message type a worker sends (api/protocol.md); w is the
 * sender, i its index. */
/* HELLO: the protocol version checked, the worker's clocks noted, its SCHEDULE sent. */
static void on_hello(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	json_t *proto = json_object_get(m->json, "protocol");
	if (!json_is_integer(proto) || json_integer_value(proto) != PROTO_VERSION) {
		fail_run(c, "worker %d speaks another protocol version", i);
		return;
	}
	if (w->state != W_SPAWNED) {
		fail_run(c, "worker %d said hello twice", i);
		return;
	}
	w->state = W_HELLO;
	json_t *mono = json_object_get(m->json, "mono_ns");
	json_t *wall = json_object_get(m->json, "wall_ns");
	runs_worker_update(c->r->store, c->id, i, 0,
			   json_is_integer(mono) ? json_integer_value(mono) : 0,
			   json_is_integer(wall) ? json_integer_value(wall) : 0, "hello", -1,
			   NULL);
	if (c->stopping)
		return;
	if (json_is_true(json_object_get(m->json, "clock"))) {
		/* its clock first: the SCHEDULE follows the burst (clock_burst_end) */
		w->clock = 1;
		clock_burst(c, i, CLOCK_FIRST);
		return;
	}
	send_schedule(c, i);
}

/* READY: when every worker is, START with time zero a little in the future. */
static void on_ready(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	if (w->state != W_HELLO) {
		fail_run(c, "worker %d sent ready out of order", i);
		return;
	}
	w->state = W_READY;
	maybe_start(c);
}

/* Every worker ready (and its clock measured): START with time zero a
 * little in the future. */
static void maybe_start(struct run_ctx *c)
{
	int all = 1;
	for (int k = 0; k < c->n; k++)
		all = all && c->w[k].state == W_READY && (c->w[k].synced || !c->w[k].clock);
	if (all && !c->stopping && !c->t0) {
		c->t0 = mono_ns() + START_LEAD_NS;
		c->t0_wall = wall_ns() + START_LEAD_NS;
		c->psi0 = host_cpu_pressure_us();
		host_cpu_steal(&c->steal0, &c->cpu0);
		c->profiling = !c->spec.has_warmup;
		if (c->profiling)
			c->prof_start = c->t0;
		send_start(c, 0);
		runs_set_t0(c->r->store, c->id, c->t0_wall);
		live_set_t0(c->id, c->t0);
	}
}

/* PHASE_DONE of the warm-up: when every worker is through it, profiling starts for all. */
static void on_phase_done(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	const char *ph = json_string_value(json_object_get(m->json, "phase"));
	if (c->profiling || !ph || strcmp(ph, "warmup") != 0 || w->warm_done) {
		fail_run(c, "worker %d sent an unexpected phase_done", i);
		send_stop(c, "protocol error");
		return;
	}
	w->warm_done = 1;
	int all = 1;
	for (int k = 0; k < c->n; k++)
		all = all && (c->w[k].warm_done || c->w[k].exited);
	if (all && !c->stopping) {
		/* every worker is through the warm-up: profiling starts for all
		 * at once, a little in the future */
		c->profiling = 1;
		c->prof_start = mono_ns() + START_LEAD_NS;
		send_start(c, c->prof_start - c->t0);
	}
}

/* HEARTBEAT: the worker's progress counters. */
static void on_heartbeat(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	json_t *j = m->json;
#define GETC(name) \
if (json_is_integer(json_object_get(j, #name))) \
w->name = json_integer_value(json_object_get(j, #name))
	GETC(sent);
	GETC(completed);
	GETC(errors);
	GETC(in_flight);
#undef GETC
}

/* SAMPLE: the worker's self-telemetry, stored (client.h). */
static void on_sample(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	struct csample cs;
	char err[HR_ERRLEN];
	if (csample_from_json(m->json, &cs, err) < 0) {
		fail_run(c, "worker %d sent a malformed sample: %s", i, err);
		send_stop(c, "protocol error");
		return;
	}
	client_store_worker(c->r->store, c->id, i, &cs);
}

/* RECORDS: a batch decoded, credited to its sender, handed to the store. */
static void on_records(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	struct hr_record *recs;
	size_t n;
	char err[HR_ERRLEN];
	if (record_batch_decode(m->data, m->len, &recs, &n, err) < 0) {
		fail_run(c, "worker %d sent a malformed record batch: %s", i, err);
		send_stop(c, "protocol error");
		return;
	}
	for (size_t k = 0; k < n; k++)
		recs[k].worker = (uint32_t)i; /* the sender is authoritative */
	if (c->spec.stop_on_saturation && c->prof_start)
		sat_records(c, recs, n);
	c->records += (long long)n;
	w->records += (long long)n;
	selfmet_records((long long)n);
	if (n) {
		live_records(c->id, recs, n); /* before the store takes them */
		runs_add_records(c->r->store, c->id, recs, n);
		count_stored(c, (long long)n);
	} else {
		free(recs);
	}
}

/* DONE: the worker's last counters; it exits next. */
static void on_done(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	json_t *j = m->json;
	if (json_is_integer(json_object_get(j, "sent")))
		w->sent = json_integer_value(json_object_get(j, "sent"));
	if (json_is_integer(json_object_get(j, "completed")))
		w->completed = json_integer_value(json_object_get(j, "completed"));
	if (json_is_integer(json_object_get(j, "errors")))
		w->errors = json_integer_value(json_object_get(j, "errors"));
	json_t *unsent = json_object_get(j, "unsent");
	if (json_is_integer(unsent) && json_integer_value(unsent) >= 0)
		w->unsent = json_integer_value(unsent);
	w->in_flight = 0;
	w->state = W_DONE;
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, "done", -1, NULL);
}

/* FAIL: the worker's fatal error fails the run. */
static void on_fail(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	const char *msg = json_string_value(json_object_get(m->json, "message"));
	fail_run(c, "worker %d failed: %.300s", i, msg ? msg : "(no message)");
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, "failed", -1, msg);
	send_stop(c, "another worker failed");
}

/* CLOCK: the answer to the pending exchange (a late or stray one is
 * dropped: its seq or t1 is not the pending one's). */
static void on_clock(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	int64_t t4 = mono_ns();
	json_t *seq = json_object_get(m->json, "seq"), *t1 = json_object_get(m->json, "t1");
	json_t *t2 = json_object_get(m->json, "t2"), *t3 = json_object_get(m->json, "t3");
	if (!json_is_integer(seq) || !json_is_integer(t1) || !json_is_integer(t2) ||
	    !json_is_integer(t3)) {
		fail_run(c, "worker %d sent a malformed clock answer", i);
		send_stop(c, "protocol error");
		return;
	}
	if (!w->clock || !w->pending || json_integer_value(seq) != w->seq ||
	    json_integer_value(t1) != w->sent_t1)
		return;
	w->ex[w->n_ex++] = (struct clock_sample){w->sent_t1, json_integer_value(t2),
						 json_integer_value(t3), t4};
	clock_next(c, i);
}

typedef void (*msg_handler)(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m);
static const msg_handler msg_handlers[PROTO__MAX] = {
	[PROTO_HELLO] = on_hello,	  [PROTO_READY] = on_ready,
	[PROTO_PHASE_DONE] = on_phase_done, [PROTO_HEARTBEAT] = on_heartbeat,
	[PROTO_SAMPLE] = on_sample,	  [PROTO_RECORDS] = on_records,
	[PROTO_DONE] = on_done,		  [PROTO_FAIL] = on_fail,
	[PROTO_CLOCK] = on_clock,
};

static void on_message(struct run_ctx *c, struct proto_msg *m)
{
	int i = ident_index(c, m->ident);
	if (i < 0) {
		hlog(LOG_INFO, "runner", "run %lld: message from unknown peer '%s' ignored\n",
			(long long)c->id, m->ident);
		return;
	}
	struct wk *w = &c->w[i];
	w->last_seen = mono_ns();
	msg_handler h = m->type > 0 && m->type < PROTO__MAX ? msg_handlers[m->type] : NULL;
	if (!h) { /* SCHEDULE, START, STOP go the other way */
		fail_run(c, "worker %d sent an unexpected %s message", i, proto_type_name(m->type));
		send_stop(c, "protocol error");
		return;
	}
	h(c, w, i, m);
}

/* --- supervision ------------------------------------------------------------------ */

/* A worker sends DONE and exits; the exit can be reaped before the daemon's
 * socket has handed over the DONE (it may still sit in ZeroMQ's I/O thread),
 * so a clean exit without DONE is judged only after a grace period. */
#define EXIT_GRACE_NS 3000000000LL

static void judge_exit(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	char how[96];
	describe_exit(how, sizeof how, w->status);
	w->exit_grace = 0;
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, w->state == W_DONE ? "done" : "failed",
			   WIFEXITED(w->status) ? WEXITSTATUS(w->status) : -WTERMSIG(w->status), how);
	if (w->state != W_DONE && !c->stopping) {
		fail_run(c, "worker %d (pid %d) %s before finishing", i, (int)w->pid, how);
		send_stop(c, "another worker died");
	} else if (w->state == W_DONE && !(WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)) {
		fail_run(c, "worker %d (pid %d) %s after finishing", i, (int)w->pid, how);
	}
}

/* settle exits still waiting for their DONE: at the deadline, or now if force */
static void judge_late_exits(struct run_ctx *c, int64_t now, int force)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited && w->exit_grace &&
		    (w->state == W_DONE || force || now > w->exit_grace))
			judge_exit(c, i);
	}
}

static void reap(struct run_ctx *c)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited || w->pid <= 0 || w->remote)
			continue;
		int status;
		pid_t p = waitpid(w->pid, &status, WNOHANG);
		if (p != w->pid)
			continue;
		w->exited = 1;
		w->status = status;
		if (w->state != W_DONE && !c->stopping && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0) {
			w->exit_grace = mono_ns() + EXIT_GRACE_NS;
			continue;
		}
		judge_exit(c, i);
	}
}

/* A remote worker is gone with its agent (killed, link cut, silent):
 * placement.on_agent_loss says whether the run fails or finishes without
 * it, the loss recorded (summary.placement.lost, validity). Its records
 * received so far are kept either way; nothing more of it is taken (the
 * hub dropped its relay). */
static void worker_lost(struct run_ctx *c, int i, const char *why)
{
	struct wk *w = &c->w[i];
	if (w->lost || w->exited)
		return;
	w->lost = 1;
	w->exited = 1;
	w->exit_grace = 0;
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, "lost", -1, why);
	if (!c->lost)
		c->lost = json_array();
	json_array_append_new(c->lost, json_pack("{s:i, s:s, s:s, s:f}", "worker", i, "agent",
						 w->agent, "reason", why, "at_s",
						 c->t0 ? (double)(mono_ns() - c->t0) / 1e9 : 0.0));
	if (w->state == W_DONE || c->stopping) {
		hlog(LOG_INFO, "runner", "run %lld: worker %d %s (after it finished)\n",
			(long long)c->id, i, why);
		return;
	}
	int alive = 0;
	for (int k = 0; k < c->n; k++)
		alive += !c->w[k].exited;
	if (c->spec.placement.degrade && c->t0 && alive > 0) {
		hlog(LOG_WARN, "runner", "run %lld: worker %d %s; the run goes on without it "
				"(placement.on_agent_loss degrade)\n",
			(long long)c->id, i, why);
		return;
	}
	fail_run(c, "worker %d %s%s", i, why,
		 c->spec.placement.degrade && !c->t0 ? " before the run started" : "");
	send_stop(c, "an agent was lost");
}

static void check_silence(struct run_ctx *c, int64_t now)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited || w->state == W_DONE)
			continue;
		/* workers heartbeat from START on; until then they only wait for
		 * the slowest peer to say hello */
		int64_t limit = c->t0 ? HR_WORKER_SILENCE_NS : HR_WORKER_HELLO_NS;
		if (now - w->last_seen > limit && w->remote) {
			char why[200];
			snprintf(why, sizeof why, "on agent '%s' was silent for %.1f s", w->agent,
				 (double)(now - w->last_seen) / 1e9);
			worker_lost(c, i, why);
		} else if (now - w->last_seen > limit) {
			fail_run(c, "worker %d (pid %d) was silent for %.1f s", i, (int)w->pid,
				 (double)(now - w->last_seen) / 1e9);
			send_stop(c, "another worker fell silent");
			if (w->pid > 0)
				kill(w->pid, SIGKILL);
			w->last_seen = now; /* report once */
		}
	}
}

static int all_finished(const struct run_ctx *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->w[i].state != W_DONE && (!c->w[i].exited || c->w[i].exit_grace))
			return 0;
	return 1;
}

/* Completed profiling requests for the saturation detector: their time to
 * first token (or latency), at their completion on the phase's clock. */
static void post_progress(struct run_ctx *c)
{
	long long sent = 0, completed = 0, errors = 0, in_flight = 0;
	for (int i = 0; i < c->n; i++) {
		sent += c->w[i].sent;
		completed += c->w[i].completed;
		errors += c->w[i].errors;
		in_flight += c->w[i].in_flight;
	}
	json_t *p = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:i}", "phase",
			      !c->t0 ? "starting" : c->profiling ? "profiling" : "warmup", "sent",
			      (json_int_t)sent,
			      "completed", (json_int_t)completed, "errors", (json_int_t)errors,
			      "in_flight", (json_int_t)in_flight, "records",
			      (json_int_t)c->records, "workers", c->n);
	runs_set_progress(c->r->store, c->id, p);
	json_decref(p);
	live_progress(c->id, !c->t0 ? "starting" : c->profiling ? "profiling" : "warmup", sent,
		      completed, errors, in_flight, c->records, c->n);
}

/* The wait for the telemetry baseline ends early on a cancel or a stop. */
static int baseline_give_up(void *ud)
{
	struct run_ctx *c = ud;
	return atomic_load(&c->r->cancel_id) == c->id || atomic_load(&c->r->stopping);
}

static void terminate_all(struct run_ctx *c)
{
	/* workers that sent DONE exit on their own once their socket is
	 * flushed: give them a moment, so their exit status is meaningful */
	int64_t deadline = mono_ns() + 2000000000LL;
	for (;;) {
		reap(c);
		int waiting = 0;
		for (int i = 0; i < c->n; i++)
			waiting |= !c->w[i].exited && c->w[i].pid > 0 && c->w[i].state == W_DONE;
		if (!waiting || mono_ns() > deadline)
			break;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < c->n; i++)
		if (!c->w[i].exited && c->w[i].pid > 0)
			kill(c->w[i].pid, SIGKILL);
	for (int i = 0; i < c->n; i++) {
		if (c->w[i].exited || c->w[i].pid <= 0)
			continue;
		int status;
		if (waitpid(c->w[i].pid, &status, 0) == c->w[i].pid) {
			c->w[i].exited = 1;
			c->w[i].status = status;
		}
	}
}

/* One supervision interface for a run's pool of workers: the rest of the
 * runner sees its workers only through this and the protocol. Local
 * worker processes implement it (posix_spawn, waitpid, SIGKILL); remote
 * agents' workers are the other implementation it leaves room for. */
struct pool_ops {
	const char *name;
	int (*start)(struct run_ctx *c, int i); /* worker i: 0, or -1 (it never started) */
	void (*reap)(struct run_ctx *c);        /* note the workers that ended (judge_exit) */
	void (*stop)(struct run_ctx *c);        /* the run is over: every worker ends */
};

static const struct pool_ops local_pool = {"local", spawn_worker, reap, terminate_all};

/* Remote workers (placement, docs/agents.md): started by their agent,
 * relayed by the agent hub to this run's own socket with their routing
 * id, so the protocol, the clock exchanges and the records are the same as
 * a local worker's. The hub reports their exits and their agents' loss. */
/* The files remote workers read, by content: the datasets (stored under
 * their SHA-256 already) and workload.tokenizer (hashed here, once). */
static int run_files(struct run_ctx *c)
{
	if (c->files)
		return 0;
	c->files = json_object();
	char hex[65];
	for (int k = 0; k < HR_MAX_CLASSES; k++) {
		if (!c->have_ds[k])
			continue;
		const char *base = strrchr(c->ds[k].path, '/');
		base = base ? base + 1 : c->ds[k].path;
		if (strlen(base) == 64 && strspn(base, "0123456789abcdef") == 64)
			snprintf(hex, sizeof hex, "%s", base); /* stored by its SHA-256 */
		else if (agents_file_sha256(c->ds[k].path, hex) < 0) {
			fail_run(c, "workload.dataset: cannot read %s", c->ds[k].path);
			return -1;
		}
		json_object_set_new(c->files, c->ds[k].path, json_string(hex));
	}
	const char *tok = c->spec.workload.tokenizer;
	if (tok) {
		if (agents_file_sha256(tok, hex) < 0) {
			fail_run(c, "workload.tokenizer: cannot read %s", tok);
			return -1;
		}
		json_object_set_new(c->files, tok, json_string(hex));
	}
	return 0;
}

static int remote_start(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	char err[HR_ERRLEN];
	if (run_files(c) < 0)
		return -1;
	if (agents_spawn(c->id, c->endpoint, w->agent, &i, 1,
			 c->key_var ? strchr(c->key_var, '=') + 1 : NULL, c->files, err) < 0) {
		fail_run(c, "cannot start worker %d on agent '%s': %s", i, w->agent, err);
		return -1;
	}
	w->state = W_SPAWNED;
	w->last_seen = mono_ns();
	char detail[AGENT_NAME_MAX + 16];
	snprintf(detail, sizeof detail, "agent %s", w->agent);
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, "started", -1, detail);
	return 0;
}

static void remote_reap(struct run_ctx *c)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (!w->remote || w->exited)
			continue;
		int status = 0;
		char why[256] = "";
		int st = agents_worker_state(c->id, i, &status, why, sizeof why);
		if (st == AGENT_W_LOST) {
			worker_lost(c, i, why);
		} else if (st == AGENT_W_EXITED) {
			w->exited = 1;
			w->status = status;
			if (w->state != W_DONE && !c->stopping && WIFEXITED(status) &&
			    WEXITSTATUS(status) == 0) {
				w->exit_grace = mono_ns() + EXIT_GRACE_NS;
				continue;
			}
			judge_exit(c, i);
		}
	}
}

static void remote_stop(struct run_ctx *c)
{
	int64_t deadline = mono_ns() + 2000000000LL;
	for (;;) {
		remote_reap(c);
		int waiting = 0;
		for (int i = 0; i < c->n; i++)
			waiting |= c->w[i].remote && !c->w[i].exited && c->w[i].state == W_DONE;
		if (!waiting || mono_ns() > deadline)
			break;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	agents_end_run(c->id); /* the agents kill what is left */
	for (int i = 0; i < c->n; i++)
		if (c->w[i].remote && !c->w[i].exited) {
			c->w[i].exited = 1;
			c->w[i].status = SIGKILL; /* a wait status: killed by SIGKILL */
		}
}

static int placed_start(struct run_ctx *c, int i)
{
	return c->w[i].remote ? remote_start(c, i) : spawn_worker(c, i);
}

static void placed_reap(struct run_ctx *c)
{
	reap(c);
	remote_reap(c);
}

static void placed_stop(struct run_ctx *c)
{
	terminate_all(c);
	remote_stop(c);
}

static const struct pool_ops placed_pool = {"placed", placed_start, placed_reap, placed_stop};

/* The workers a placement asks for: placement.local here, then each chosen
 * agent's in name order, numbered on after the local ones, so the split
 * (lib/split.c) is that of a one-host run with as many workers. 0, or -1
 * with why (no agent matches, too many workers, a slot short). */
static int place(struct run_ctx *c, char *why)
{
	const struct spec *sp = &c->spec;
	int n = agents_place(&sp->placement, c->picks, HR_MAX_WORKERS, why);
	if (n < 0)
		return -1;
	int total = sp->placement.local;
	for (int k = 0; k < n; k++)
		total += c->picks[k].workers;
	if (total > HR_MAX_WORKERS)
		return errf(why, "placement: %d workers in all, more than %d", total, HR_MAX_WORKERS);
	int cap = sp->load.mode == SPEC_LOAD_CONCURRENCY ? sp->load.concurrency
							 : sp->load.max_concurrency;
	int wcap = !sp->has_warmup ? 0
		   : sp->warmup.mode == SPEC_LOAD_CONCURRENCY ? sp->warmup.concurrency
							       : sp->warmup.max_concurrency;
	if ((cap > 0 && total > cap) || (wcap > 0 && total > wcap))
		return errf(why, "placement: %d workers in all, more than the run's %s (%d): a "
				 "worker needs a slot",
			    total, cap > 0 && total > cap ? "concurrency" : "warm-up concurrency",
			    cap > 0 && total > cap ? cap : wcap);
	c->n_picks = n;
	c->n = total;
	return 0;
}

/* summary.placement: where each worker ran, what was lost */
static json_t *placement_json(const struct run_ctx *c)
{
	json_t *ag = json_array();
	int i = c->spec.placement.local;
	for (int k = 0; k < c->n_picks; k++) {
		json_t *ws = json_array();
		for (int j = 0; j < c->picks[k].workers; j++)
			json_array_append_new(ws, json_integer(i++));
		json_array_append_new(ag, json_pack("{s:s, s:o}", "name", c->picks[k].conn,
						     "workers", ws));
	}
	return json_pack("{s:i, s:o, s:s, s:o, s:i}", "local", c->spec.placement.local, "agents",
			 ag, "on_agent_loss", c->spec.placement.degrade ? "degrade" : "fail", "lost",
			 c->lost ? json_incref(c->lost) : json_array(), "workers", c->n);
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
	if (runs_finish(r->store, r->unfinished_id, r->unfinished_state, r->unfinished_reason,
			NULL, err) < 0)
		return 1;
	hlog(LOG_INFO, "runner", "run %lld %s (stored late, without its summary)\n",
		(long long)r->unfinished_id, r->unfinished_state);
	r->unfinished_id = 0;
	free(r->unfinished_reason);
	r->unfinished_reason = NULL;
	return 0;
}

/* A store failure since the run began (a failed commit, a record batch
 * that could not be inserted): noted once, and the run is stopped, since
 * what it measures from then on is not kept. */
static void check_store(struct run_ctx *c)
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
		send_stop(c, "the store failed");
	}
}

/* A run ended, however: the calibration or sweep it belongs to (if any)
 * takes its next step. */
static void run_ended(struct runner *r, int64_t id, json_t *spec_json)
{
	calib_run_finished(r->store, id, spec_json);
	sweep_run_finished(r->store, id);
}

/* --- a run's life: prepare, start, drive, conclude ------------------------------ */

/* Everything a run needs before its workers: room on the disk, its own
 * headroom-mock (target.mock, the run's or a class's) with the address put
 * in the spec the workers get, that spec parsed, the datasets referenced
 * and the API key resolved. 0, or -1 with why; what was taken is given
 * back by start_failed. */
static int prepare(struct run_ctx *c, json_t *spec_json, struct mockproc *mock, char *why)
{
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
	json_array_foreach(json_object_get(spec_json, "classes"), ci, cl)
		want_mock |= json_is_true(json_object_get(json_object_get(cl, "target"), "mock"));
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
		hlog(LOG_INFO, "runner", "run %lld: headroom-mock (pid %d) on %s\n", (long long)c->id,
			(int)mock->pid, mock->addr);
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
	    resolve_secret(c, why) < 0)
		return -1;
	if (!c->envp)
		build_env(c);
	return 0;
}

/* A run that could not start: failed with why, and everything prepare
 * took given back (the one clean-up path of a start). */
static void start_failed(struct run_ctx *c, json_t *spec_json, struct mockproc *mock,
			 const char *why)
{
	hlog(LOG_ERROR, "runner", "run %lld failed: %s\n", (long long)c->id, why);
	finish_run(c->r, c->id, RUN_FAILED, why, NULL);
	run_ended(c->r, c->id, spec_json);
	mockproc_stop(mock);
	release_datasets(c);
	forget_secret(c); /* the workers' environment (placement fails after prepare) */
	spec_release(&c->spec);
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
		zmq_pollitem_t pi = {c->sock, 0, ZMQ_POLLIN, 0};
		zmq_poll(&pi, 1, 100);
		int drained = 0;
		for (int k = 0; k < 256; k++) {
			struct proto_msg m;
			char perr[HR_ERRLEN];
			int rc = proto_recv(c->sock, 1, &m, ZMQ_DONTWAIT, perr);
			if (rc == 0 || rc == -1) {
				drained = 1;
				break;
			}
			if (rc == -2) {
				int i = ident_index(c, m.ident);
				fail_run(c, "worker %d sent a malformed message: %s", i, perr);
				send_stop(c, "protocol error");
				continue;
			}
			on_message(c, &m);
			proto_msg_release(&m);
		}
		c->pool->reap(c);
		int64_t now = mono_ns();
		judge_late_exits(c, now, 0);
		/* with messages still queued the daemon is the one behind (ingestion
		 * back-pressure): a worker's heartbeat may be waiting in the queue */
		if (drained)
			check_silence(c, now);
		daemon_sample(c, now, 0);
		check_store(c);
		if (atomic_load(&r->cancel_id) == id && !c->cancelled) {
			c->cancelled = 1;
			send_stop(c, "cancelled");
		}
		if (atomic_load(&r->stopping) && !c->interrupted) {
			c->interrupted = 1;
			send_stop(c, "daemon stopping");
		}
		if (c->fail_reason && !c->stopping)
			send_stop(c, "run failed");
		sat_tick(c, now);
		clock_tick(c, now);
		selfmet_runner_tick();
		int alive = 0;
		for (int i = 0; i < c->n; i++)
			alive += !c->w[i].exited;
		selfmet_workers(alive);
		if (now - last_progress > PROGRESS_EVERY_NS) {
			post_progress(c);
			last_progress = now;
		}
		if (all_finished(c))
			break;
		if (c->stopping && now > c->stop_deadline)
			break;
	}
}

/* After the workers: every record received checked against the store, the
 * summary with the client verdict, its judgement and card, and the run's
 * final state. */
static void conclude(struct run_ctx *c, json_t *spec_json, json_t *card)
{
	struct runner *r = c->r;
	int64_t id = c->id;
	char err[HR_ERRLEN];
	runs_sync(r->store);
	/* every record received must be in the store: count what it holds */
	check_store(c);
	char store_why[400] = "";
	long long have = runs_count_records(r->store, id);
	if (c->store_error && disk_reserve_release())
		hlog(LOG_WARN, "runner", "run %lld: released the store's %d MiB reserve for the "
				"run's end\n",
			(long long)id, HR_STORE_RESERVE_MB);
	if (have >= 0 && have < c->records)
		snprintf(store_why, sizeof store_why,
			 "the store could not write %lld of the %lld records received: %s",
			 c->records - have, c->records, c->store_error ? c->store_error : "unknown error");
	else if (c->store_error)
		snprintf(store_why, sizeof store_why, "the store failed during the run: %s",
			 c->store_error);
	long long valid = 0;
	json_t *summary = summary_compute(r->store, id, &c->spec, c->t0_wall, &valid, err);
	if (!summary)
		hlog(LOG_ERROR, "runner", "run %lld: summary failed: %s\n", (long long)id, err);
	else
		json_object_set_new(summary, "client", verdict_compute(r->store, id, &c->spec, c->n, summary));
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
		json_object_set_new(summary, "clock", clock_json(c));
	if (summary && c->spec.placement.given)
		json_object_set_new(summary, "placement", placement_json(c));
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
	card_end(r->store, id, card, summary); /* lengths sent, verdict, GPUs */
	const char *state = RUN_SUCCEEDED;
	char reason[600] = "";
	if (c->interrupted) {
		state = RUN_INTERRUPTED;
		snprintf(reason, sizeof reason, "the daemon was stopped during the run%s%s",
			 store_why[0] ? "; " : "", store_why);
	} else if (c->cancelled) {
		state = RUN_CANCELLED;
		snprintf(reason, sizeof reason, "cancelled by request%s%s", store_why[0] ? "; " : "",
			 store_why);
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
		hlog(LOG_ERROR, "runner", "run %lld: cannot index the summary: %s\n",
			(long long)id, err);
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

static void execute(struct runner *r, int64_t id, json_t *spec_json)
{
	struct run_ctx c = {.r = r, .id = id, .pool = &local_pool};
	struct mockproc mock = {.pid = -1, .out = -1};
	char why[HR_ERRLEN];
	if (prepare(&c, spec_json, &mock, why) < 0) {
		start_failed(&c, spec_json, &mock, why);
		return;
	}
	c.stored_base = atomic_load(&r->stored);
	store_commit_status(r->store, &c.commit_fails0, NULL, 0);
	c.record_fails0 = runs_record_failures(NULL, 0);
	c.n = c.spec.workers; /* with classes, spec parsing already dropped idle workers */
	if (!c.spec.n_classes && c.spec.load.mode == SPEC_LOAD_CONCURRENCY &&
	    c.spec.load.requests > 0 && c.spec.load.requests < c.n)
		c.n = (int)c.spec.load.requests; /* a worker with nothing to send is useless */
	if (c.spec.placement.given) {
		c.pool = &placed_pool;
		if (place(&c, why) < 0) {
			start_failed(&c, spec_json, &mock, why);
			return;
		}
	}
	c.w = xcalloc((size_t)c.n, sizeof *c.w);
	for (int k = 0, i = c.spec.placement.local; k < c.n_picks; k++)
		for (int j = 0; j < c.picks[k].workers; j++, i++) {
			c.w[i].remote = 1;
			snprintf(c.w[i].agent, sizeof c.w[i].agent, "%s", c.picks[k].conn);
		}
	c.started = mono_ns();
	live_begin(id);
	hlog(LOG_INFO, "runner", "run %lld started with %d worker(s)\n", (long long)id, c.n);

	/* the credibility card: the client host and the server's identity */
	json_t *card = card_begin(r->store, id, c.spec.json, &c.spec, &c.net,
				  c.key_var ? strchr(c.key_var, '=') + 1 : NULL);
	/* telemetry from before the first request (the baseline) to after the last */
	struct collector *tele = collector_start(r->store, id, &c.spec, r->o.nvml_lib,
						  &c.net);
	if (open_socket(&c) == 0) {
		for (int i = 0; i < c.n; i++)
			if (c.pool->start(&c, i) < 0) {
				for (int k = i; k < c.n; k++)
					c.w[k].exited = 1; /* never started */
				break;
			}
	}
	/* START is sent from the loop below, so no request (warm-up included)
	 * precedes the baseline; the workers start up meanwhile */
	if (c.sock)
		collector_wait_baseline(tele, baseline_give_up, &c);
	drive(&c);
	c.pool->stop(&c);
	c.pool->reap(&c);
	selfmet_workers(0); /* before the run's end is written: none left */
	judge_late_exits(&c, mono_ns(), 1);
	forget_secret(&c);
	release_datasets(&c);
	post_progress(&c);
	collector_stop(tele, c.cancelled || c.interrupted);
	mockproc_stop(&mock);
	/* the daemon's last sample once every record is stored: its backlog
	 * then says whether ingestion kept up to the end */
	runs_sync(r->store);
	daemon_sample(&c, mono_ns(), 1);
	if (c.sock)
		zmq_close(c.sock);
	if (c.sockpath[0])
		unlink(c.sockpath);

	conclude(&c, spec_json, card);
	free(c.fail_reason);
	free(c.store_error);
	free(c.saturated);
	free(c.sat);
	json_decref(c.lost);
	json_decref(c.files);
	for (int i = 0; i < c.n; i++)
		free(c.w[i].bursts);
	free(c.w);
	spec_release(&c.spec);
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
	json_array_foreach(list, i, it) {
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
				json_object_set_new(summary, "client",
						    verdict_compute(s, id, &sp, run_workers(&sp),
								    summary));
				if (history_index_summary(s, id, summary, why) < 0)
					hlog(LOG_ERROR, "runner", "run %lld: cannot index the "
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
				hlog(LOG_ERROR, "runner", "run %lld: cannot index the summary: %s\n",
					(long long)id, why);
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
