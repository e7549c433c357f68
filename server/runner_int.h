/* runner_int.h - the runner's parts and what they share: the runner
 * itself, the context of the run in progress (struct run_ctx) with its
 * workers (struct wk), the supervision interface (struct pool_ops) and the
 * functions one part calls in another. Inside the runner only; the rest of
 * the daemon uses runner.h.
 *
 * The parts, each one concern:
 *   runner.c      a run's life: prepare, launch, drive, and one way out
 *                 (stop, give back, conclude or record the failed start);
 *                 the runner thread
 *   runproto.c    the worker protocol: what is sent, one handler per
 *                 message type received
 *   wclock.c      each worker's clock exchanges (bursts, estimates, drift)
 *   share.c       the SCHEDULE message, a pure function (share.h)
 *   supervise.c   what the runner makes of the workers' exits and silences
 *   pool_local.c  the pool of local worker processes
 *   pool_remote.c placement: the pool of local and agents' workers
 *   wenv.c        the workers' environment and the API key in it
 *   runwatch.c    what is watched while a run goes: the daemon's sample,
 *                 the ingest backlog, saturation, progress, the store
 */
#ifndef HR_RUNNER_INT_H
#define HR_RUNNER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "agents.h"
#include "clocksync.h"
#include "datasets.h"
#include "hrlimits.h"
#include "mockproc.h"
#include "netallow.h"
#include "proto.h"
#include "record.h"
#include "runner.h"
#include "satdet.h"
#include "spec.h"

#define STOP_GRACE_NS 3000000000LL /* after STOP, how long workers get to finish */
#define START_LEAD_NS 50000000LL   /* t0 is this far after the last READY */
#define PROGRESS_EVERY_NS 500000000LL
/* the clock exchanges (lib/clocksync.h): a burst before a worker's
 * SCHEDULE, then one every CLOCK_EVERY_NS through the run; an answer
 * later than CLOCK_WAIT_NS is given up */
#define CLOCK_FIRST 16
#define CLOCK_BURST 8
#define CLOCK_EVERY_NS 5000000000LL
#define CLOCK_WAIT_NS 500000000LL
#define CLOCK_MAX_BURSTS 720
/* A worker sends DONE and exits; the exit can be reaped before the daemon's
 * socket has handed over the DONE (it may still sit in ZeroMQ's I/O thread),
 * so a clean exit without DONE is judged only after a grace period. */
#define EXIT_GRACE_NS 3000000000LL

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
	int exited;         /* reaped */
	int64_t exit_grace; /* clean exit reaped before its DONE arrived: wait until then */
	int warm_done;      /* sent PHASE_DONE for the warm-up */
	int status;         /* wait status */
	int64_t last_seen;
	long long sent, completed, errors, in_flight, records;
	long long unsent; /* DONE: arrivals never sent (the ceiling held them past the end) */
	/* its clock (lib/clocksync.h, docs/client.md "One clock"): a worker
	 * whose HELLO said "clock" answers CLOCK exchanges, a burst before its
	 * SCHEDULE and more through the run (wclock.c) */
	int clock, synced;       /* it answers; its first burst is over */
	int pending, left, n_ex; /* an exchange awaits its answer; to go and made in this burst */
	int64_t seq, sent_t1, last_burst;
	struct clock_sample ex[CLOCK_FIRST];
	struct clock_est est;     /* the latest burst's estimate */
	struct clock_est *bursts; /* every burst's, for the drift */
	int64_t last_at;          /* daemon time of the last burst's estimate */
	int nb;
	int64_t t0_sent; /* the time zero its first START carried, on its clock */
	struct clock_est t0_est; /* the estimate t0_sent used: the run's timeline maps
	                          * its records with it (ok 0: none measured) */
	/* placement (docs/agents.md): a worker on an agent (pid 0 here) */
	int remote, lost;
	char agent[AGENT_NAME_MAX + 1];
};

struct run_ctx;

/* One supervision interface for a run's pool of workers: the rest of the
 * runner sees its workers only through this and the protocol. Two
 * implementations: local_pool, local worker processes (posix_spawn,
 * waitpid, SIGKILL: pool_local.c), and placed_pool, for a spec with a
 * placement, local processes plus workers that agents run, through the
 * agent hub (pool_remote.c, agents.c). */
struct pool_ops {
	const char *name;
	int (*start)(struct run_ctx *c, int i); /* worker i: 0, or -1 (it never started) */
	void (*reap)(struct run_ctx *c);        /* note the workers that ended (judge_exit) */
	void (*stop)(struct run_ctx *c);        /* the run is over: every worker ends */
};

extern const struct pool_ops local_pool, placed_pool;

struct collector;

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
	int launched; /* its workers were started (launch): they are stopped at the end */
	int64_t started, t0, t0_wall;
	long long psi0;         /* the host's CPU pressure total at time zero (us), -1: none */
	long long steal0, cpu0; /* the host's steal and CPU time at time zero (ticks), -1: none */
	int profiling;          /* the profiling phase has started (after any warm-up) */
	int stopping;           /* STOP sent */
	int64_t stop_deadline;
	char *fail_reason; /* first failure wins */
	int cancelled, interrupted;
	long long records;
	long long stored_base; /* runner.stored when the run began */
	/* workload.kind dataset: the file the workers load; one per class
	 * (ds[k] for class k) with spec.classes, else ds[0] */
	struct dataset_ref ds[HR_MAX_CLASSES];
	int have_ds[HR_MAX_CLASSES];
	char **envp;         /* workers' environment: the daemon's pid, any API key */
	char *key_var;       /* the entry of envp holding the key (wiped at the end) */
	char parent_var[48]; /* PARENT_ENV=<the daemon's pid> */
	/* store failures seen when the run began (store_commit_status,
	 * runs_record_failures): more at the end means lost writes */
	long long commit_fails0, record_fails0;
	char *store_error; /* the first store failure during the run */
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
	/* what a run holds until its end (runner.c, end_run) */
	struct mockproc mock;   /* target.mock's headroom-mock, pid -1 when none */
	json_t *card;           /* the credibility card begun (card.h) */
	struct collector *tele; /* its telemetry (telemetry.h) */
};

/* runner.c: the run's first failure (later ones are dropped). */
void fail_run(struct run_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* runproto.c: the worker protocol (api/protocol.md). */
/* A control message to worker i (its routing id "w<i>", worker/main.c). */
int runproto_send(struct run_ctx *c, int i, int type, json_t *o, int flags);
/* STOP to every worker still going, once; the stop deadline set. */
void runproto_stop(struct run_ctx *c, const char *reason);
/* Waits up to wait_ms for a message, then handles what is queued, 256 at
 * most. Returns 1 when the socket was drained, 0 when more are waiting. */
int runproto_drain(struct run_ctx *c, long wait_ms);
/* Worker i's first clock burst is over: its SCHEDULE goes, maybe START. */
void runproto_clock_synced(struct run_ctx *c, int i);

/* wclock.c: each worker's clock exchanges (lib/clocksync.h). */
/* The first burst, before worker i's SCHEDULE (runproto_clock_synced at its end). */
void wclock_begin(struct run_ctx *c, int i);
/* Worker i's answer to exchange seq sent at t1 (a late or stray one is
 * dropped), received at t4. */
void wclock_answer(struct run_ctx *c, int i, int64_t seq, int64_t t1, int64_t t2, int64_t t3,
                   int64_t t4);
/* Answers given up; a burst every CLOCK_EVERY_NS while the run goes. */
void wclock_tick(struct run_ctx *c, int64_t now);
/* The summary's `clock` (docs/api.md, "Summary JSON"). */
json_t *wclock_json(const struct run_ctx *c);

/* supervise.c: the workers' exits and silences, whichever pool started them. */
/* Worker i ended with wait status (reaped, or reported by its agent):
 * judged now, or after EXIT_GRACE_NS when it exited cleanly before its DONE. */
void supervise_exited(struct run_ctx *c, int i, int status);
/* Exits still waiting for their DONE: at the deadline, or now if force. */
void supervise_late_exits(struct run_ctx *c, int64_t now, int force);
/* Workers silent for too long: the run fails, or a remote one is lost. */
void supervise_silence(struct run_ctx *c, int64_t now);
/* Every worker sent DONE or is gone (an exit in its grace period is not). */
int supervise_all_finished(const struct run_ctx *c);

/* pool_remote.c: placement (docs/agents.md). */
/* The workers a placement asks for (c->n, c->picks). 0, or -1 with why. */
int pool_place(struct run_ctx *c, char *why);
/* A remote worker gone with its agent: the run fails or goes on without it. */
void pool_worker_lost(struct run_ctx *c, int i, const char *why);
/* summary.placement: where each worker ran, what was lost. */
json_t *pool_placement_json(const struct run_ctx *c);

/* wenv.c: the workers' environment (docs/security.md#secrets). */
/* target.api_key_secret resolved into the environment. 0, or -1 with err. */
int wenv_resolve_secret(struct run_ctx *c, char *err);
/* The environment without a key (when wenv_resolve_secret did not build one). */
void wenv_build(struct run_ctx *c);
/* The API key the workers get, or NULL. */
const char *wenv_key(const struct run_ctx *c);
/* The environment freed, the key wiped. */
void wenv_forget(struct run_ctx *c);

/* runwatch.c: what is watched while a run goes. */
/* The daemon's own sample, once a second from t0 on (force: now). */
void watch_daemon_sample(struct run_ctx *c, int64_t now, int force);
/* n records handed to the store: counted as stored once its writer has them. */
void watch_count_stored(struct run_ctx *c, long long n);
/* Profiling records for the saturation detector. */
void watch_sat_records(struct run_ctx *c, const struct hr_record *recs, size_t n);
/* The saturation verdict every 250 ms: an oversaturated run is stopped. */
void watch_saturation(struct run_ctx *c, int64_t now);
/* The run's progress, stored and streamed. */
void watch_progress(struct run_ctx *c);
/* A store failure since the run began stops the run. */
void watch_store(struct run_ctx *c);

#endif
