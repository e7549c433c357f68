/* runproto.c - the worker protocol on the run's socket (api/protocol.md):
 * what the runner sends (SCHEDULE, START, STOP, and wclock.c's CLOCK), and
 * one handler per message type a worker sends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "client.h"
#include "csample.h"
#include "live.h"
#include "log.h"
#include "record.h"
#include "runner_int.h"
#include "runs.h"
#include "selfmet.h"
#include "share.h"
#include "util.h"
#include "verdict.h"

/* --- sending ---------------------------------------------------------------------- */

/* A control message to worker i (its routing id "w<i>", worker/main.c). */
int runproto_send(struct run_ctx *c, int i, int type, json_t *o, int flags)
{
	char id[16];
	snprintf(id, sizeof id, "w%d", i);
	return proto_send_json(c->sock, id, type, o, flags);
}

void runproto_stop(struct run_ctx *c, const char *reason)
{
	if (c->stopping)
		return;
	c->stopping = 1;
	c->stop_deadline = mono_ns() + STOP_GRACE_NS;
	json_t *m = json_pack("{s:s}", "reason", reason);
	for (int i = 0; i < c->n; i++) {
		if (c->w[i].state >= W_HELLO && c->w[i].state != W_DONE && !c->w[i].exited)
			runproto_send(c, i, PROTO_STOP, m, ZMQ_DONTWAIT);
	}
	json_decref(m);
}

/* START for the current phase; phase_start is ns since t0. Each worker
 * gets time zero on its own clock: the daemon's t0 plus its measured
 * offset (the same value for every phase). */
static void send_start(struct run_ctx *c, int64_t phase_start)
{
	for (int k = 0; k < c->n; k++) {
		struct wk *w = &c->w[k];
		if (w->exited || w->state == W_DONE)
			continue;
		if (!w->t0_sent) {
			w->t0_sent = c->t0 + (w->est.ok ? w->est.offset_ns : 0);
			w->t0_est = w->est;
		}
		json_t *st = json_pack("{s:I, s:I, s:s, s:I}", "t0_mono_ns", (json_int_t)w->t0_sent,
		                       "t0_wall_ns", (json_int_t)c->t0_wall, "phase",
		                       c->profiling ? "profiling" : "warmup", "phase_start_ns",
		                       (json_int_t)phase_start);
		runproto_send(c, k, PROTO_START, st, 0);
		json_decref(st);
	}
}

/* The SCHEDULE message for worker i (share.c). */
static void send_schedule(struct run_ctx *c, int i)
{
	struct share_in in = {.run_id = c->id, .spec = &c->spec, .workers = c->n, .net = &c->net};
	for (int k = 0; k < HR_MAX_CLASSES; k++)
		in.ds[k] = c->have_ds[k] ? &c->ds[k] : NULL;
	json_t *sched = share_schedule(&in, i);
	runproto_send(c, i, PROTO_SCHEDULE, sched, 0);
	json_decref(sched);
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

void runproto_clock_synced(struct run_ctx *c, int i)
{
	if (!c->stopping)
		send_schedule(c, i);
	maybe_start(c);
}

/* --- receiving: one handler per message type ---------------------------------------- */

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
	                   json_is_integer(wall) ? json_integer_value(wall) : 0, "hello", -1, NULL);
	if (c->stopping)
		return;
	if (json_is_true(json_object_get(m->json, "clock"))) {
		/* its clock first: the SCHEDULE follows the burst (runproto_clock_synced) */
		wclock_begin(c, i);
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

/* PHASE_DONE of the warm-up: when every worker is through it, profiling starts for all. */
static void on_phase_done(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	const char *ph = json_string_value(json_object_get(m->json, "phase"));
	if (c->profiling || !ph || strcmp(ph, "warmup") != 0 || w->warm_done) {
		fail_run(c, "worker %d sent an unexpected phase_done", i);
		runproto_stop(c, "protocol error");
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
#define GETC(name)                                                                                 \
	if (json_is_integer(json_object_get(j, #name)))                                            \
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
		runproto_stop(c, "protocol error");
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
		runproto_stop(c, "protocol error");
		return;
	}
	for (size_t k = 0; k < n; k++)
		recs[k].worker = (uint32_t)i; /* the sender is authoritative */
	if (c->spec.stop_on_saturation && c->prof_start)
		watch_sat_records(c, recs, n);
	c->records += (long long)n;
	w->records += (long long)n;
	selfmet_records((long long)n);
	if (n) {
		live_records(c->id, recs, n); /* before the store takes them */
		runs_add_records(c->r->store, c->id, recs, n);
		watch_count_stored(c, (long long)n);
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
	/* every record it sent came before its DONE (one ordered connection, or
	 * an agent's relay): fewer means some were lost on the way, and the run
	 * says so rather than summarising what is left */
	json_t *sent_recs = json_object_get(j, "records");
	if (json_is_integer(sent_recs) && json_integer_value(sent_recs) != w->records)
		fail_run(c,
		         "worker %d sent %lld records but %lld arrived: records were lost on the "
		         "way to the daemon",
		         i, (long long)json_integer_value(sent_recs), w->records);
}

/* FAIL: the worker's fatal error fails the run. */
static void on_fail(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	const char *msg = json_string_value(json_object_get(m->json, "message"));
	fail_run(c, "worker %d failed: %.300s", i, msg ? msg : "(no message)");
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, "failed", -1, msg);
	runproto_stop(c, "another worker failed");
}

/* CLOCK: the answer to the pending exchange, for wclock.c. */
static void on_clock(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m)
{
	int64_t t4 = mono_ns();
	json_t *seq = json_object_get(m->json, "seq"), *t1 = json_object_get(m->json, "t1");
	json_t *t2 = json_object_get(m->json, "t2"), *t3 = json_object_get(m->json, "t3");
	if (!json_is_integer(seq) || !json_is_integer(t1) || !json_is_integer(t2) ||
	    !json_is_integer(t3)) {
		fail_run(c, "worker %d sent a malformed clock answer", i);
		runproto_stop(c, "protocol error");
		return;
	}
	wclock_answer(c, i, json_integer_value(seq), json_integer_value(t1), json_integer_value(t2),
	              json_integer_value(t3), t4);
}

typedef void (*msg_handler)(struct run_ctx *c, struct wk *w, int i, struct proto_msg *m);
static const msg_handler msg_handlers[PROTO__MAX] = {
    [PROTO_HELLO] = on_hello,
    [PROTO_READY] = on_ready,
    [PROTO_PHASE_DONE] = on_phase_done,
    [PROTO_HEARTBEAT] = on_heartbeat,
    [PROTO_SAMPLE] = on_sample,
    [PROTO_RECORDS] = on_records,
    [PROTO_DONE] = on_done,
    [PROTO_FAIL] = on_fail,
    [PROTO_CLOCK] = on_clock,
};

/* the sender of a message: its routing id "w<i>", -1 if none of the run's */
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
		runproto_stop(c, "protocol error");
		return;
	}
	h(c, w, i, m);
}

int runproto_drain(struct run_ctx *c, long wait_ms)
{
	zmq_pollitem_t pi = {c->sock, 0, ZMQ_POLLIN, 0};
	zmq_poll(&pi, 1, wait_ms);
	for (int k = 0; k < 256; k++) {
		struct proto_msg m;
		char perr[HR_ERRLEN];
		int rc = proto_recv(c->sock, 1, &m, ZMQ_DONTWAIT, perr);
		if (rc == 0 || rc == -1)
			return 1;
		if (rc == -2) {
			int i = ident_index(c, m.ident);
			fail_run(c, "worker %d sent a malformed message: %s", i, perr);
			runproto_stop(c, "protocol error");
			continue;
		}
		on_message(c, &m);
		proto_msg_release(&m);
	}
	return 0;
}
