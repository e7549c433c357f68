/* pool_remote.c - placement (docs/agents.md): the workers a spec's
 * `placement` asks for, local ones plus those agents run, and their pool
 * (struct pool_ops placed_pool). Remote workers are started by their
 * agent, relayed by the agent hub (agents.c) to this run's own socket with
 * their routing id, so the protocol, the clock exchanges and the records
 * are the same as a local worker's. The hub reports their exits and their
 * agents' loss. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "log.h"
#include "runner_int.h"
#include "runs.h"
#include "util.h"

/* --- placement ------------------------------------------------------------------- */

/* The workers a placement asks for: placement.local here, then each chosen
 * agent's in name order, numbered on after the local ones, so the split
 * (lib/split.c) is that of a one-host run with as many workers. 0, or -1
 * with why (no agent matches, too many workers, a slot short). */
int pool_place(struct run_ctx *c, char *why)
{
	const struct spec *sp = &c->spec;
	int n = agents_place(&sp->placement, c->picks, HR_MAX_WORKERS, why);
	if (n < 0)
		return -1;
	int total = sp->placement.local;
	for (int k = 0; k < n; k++)
		total += c->picks[k].workers;
	if (total > HR_MAX_WORKERS)
		return errf(why, "placement: %d workers in all, more than %d", total,
		            HR_MAX_WORKERS);
	int cap = sp->load.mode == SPEC_LOAD_CONCURRENCY ? sp->load.concurrency
	                                                 : sp->load.max_concurrency;
	int wcap = !sp->has_warmup                            ? 0
	           : sp->warmup.mode == SPEC_LOAD_CONCURRENCY ? sp->warmup.concurrency
	                                                      : sp->warmup.max_concurrency;
	if ((cap > 0 && total > cap) || (wcap > 0 && total > wcap))
		return errf(why,
		            "placement: %d workers in all, more than the run's %s (%d): a "
		            "worker needs a slot",
		            total, cap > 0 && total > cap ? "concurrency" : "warm-up concurrency",
		            cap > 0 && total > cap ? cap : wcap);
	c->n_picks = n;
	c->n = total;
	return 0;
}

/* summary.placement: where each worker ran, what was lost */
json_t *pool_placement_json(const struct run_ctx *c)
{
	json_t *ag = json_array();
	int i = c->spec.placement.local;
	for (int k = 0; k < c->n_picks; k++) {
		json_t *ws = json_array();
		for (int j = 0; j < c->picks[k].workers; j++)
			json_array_append_new(ws, json_integer(i++));
		const struct agent_pick *p = &c->picks[k];
		json_array_append_new(ag, json_pack("{s:s, s:o, s:s, s:i, s:s}", "name", p->conn,
		                                    "workers", ws, "host", p->host, "cores",
		                                    p->cores, "version", p->version));
	}
	return json_pack("{s:i, s:o, s:s, s:o, s:i}", "local", c->spec.placement.local, "agents",
	                 ag, "on_agent_loss", c->spec.placement.degrade ? "degrade" : "fail",
	                 "lost", c->lost ? json_incref(c->lost) : json_array(), "workers", c->n);
}

/* --- the remote workers ---------------------------------------------------------- */

/* A remote worker is gone with its agent (killed, link cut, silent):
 * placement.on_agent_loss says whether the run fails or finishes without
 * it, the loss recorded (summary.placement.lost, validity). Its records
 * received so far are kept either way; nothing more of it is taken (the
 * hub dropped its relay). */
void pool_worker_lost(struct run_ctx *c, int i, const char *why)
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
		hlog(LOG_WARN, "runner",
		     "run %lld: worker %d %s; the run goes on without it "
		     "(placement.on_agent_loss degrade)\n",
		     (long long)c->id, i, why);
		return;
	}
	fail_run(c, "worker %d %s%s", i, why,
	         c->spec.placement.degrade && !c->t0 ? " before the run started" : "");
	runproto_stop(c, "an agent was lost");
}

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
	if (agents_spawn(c->id, c->endpoint, w->agent, &i, 1, wenv_key(c), c->files, err) < 0) {
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
			pool_worker_lost(c, i, why);
		} else if (st == AGENT_W_EXITED) {
			supervise_exited(c, i, status);
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

/* --- the pool: local processes and remote workers --------------------------------- */

static int placed_start(struct run_ctx *c, int i)
{
	return c->w[i].remote ? remote_start(c, i) : local_pool.start(c, i);
}

static void placed_reap(struct run_ctx *c)
{
	local_pool.reap(c);
	remote_reap(c);
}

static void placed_stop(struct run_ctx *c)
{
	local_pool.stop(c);
	remote_stop(c);
}

const struct pool_ops placed_pool = {"placed", placed_start, placed_reap, placed_stop};
