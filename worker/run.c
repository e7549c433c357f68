/* run.c - the request pool between the load model, the deadlines,
 * libcurl and the outbox (see run.h). */
#include "run.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "ephandler.h"
#include "jsonesc.h"
#include "hrlimits.h"
#include "prompt.h"
#include "rng.h"
#include "util.h"

/* Sends per run_pump call. A worker that is behind (a burst, a stall)
 * would otherwise send for as long as something is due - and while it
 * sends more becomes due - never reading the responses in flight. After
 * this many it yields to the event loop with the pacer armed for now. */
#define PUMP_BATCH 32
/* Sends per event-loop wake-up, and the time they may take. run_pump is
 * also called for every completion, so without a budget per wake-up one
 * burst of completions could keep a slow (or overloaded) worker sending
 * for seconds without ever getting back to its timers: no heartbeat, no
 * sample, no record flush. Past the budget the rest waits for the next
 * wake-up, which comes at once (the pacer is armed for now). */
#define WAKEUP_SENDS 256
#define WAKEUP_SEND_NS 2000000LL

static int add_to_loop(void *ud, CURL *easy)
{
	return loop_add(ud, easy);
}

static int64_t now_ns(const struct run *r)
{
	return mono_ns() - r->t0;
}

static void activate(struct run *r, struct req *q)
{
	if (r->n_active == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->active = xrealloc(r->active, (size_t)r->cap * sizeof *r->active);
		r->idle = xrealloc(r->idle, (size_t)r->cap * sizeof *r->idle);
	}
	q->index = r->n_active;
	r->active[r->n_active++] = q;
}

static void deactivate(struct run *r, struct req *q)
{
	int i = q->index;
	struct req *last = r->active[--r->n_active];
	r->active[i] = last;
	last->index = i;
	q->index = -1;
}

/* The record of q is final: count it, carry the conversation on, ship
 * the record, recycle q. */
static void retire(struct run *r, struct req *q, int64_t now)
{
	deactivate(r, q);
	theap_del(&r->heap, &q->deadline);
	theap_del(&r->heap, &q->tmo);
	r->completed++;
	r->phase_completed++;
	if (q->rec.error)
		r->errors++;
	struct conv *c = q->owner;
	bool ok = q->rec.error == HR_ERR_NONE;
	if (c && ok && q->capture && req_turn(q, &c->hist) < 0)
		ok = false; /* the conversation outgrew its bound: it ends here */
	if (outbox_add(r->ob, &q->rec) < 0)
		r->interrupted = true;
	q->owner = NULL;
	load_done(&r->load, c, now, ok);
	req_reset(q);
	r->idle[r->n_idle++] = q; /* idle has room: it grows with active */
}

static struct req *new_req(struct run *r)
{
	struct req *q = req_new(&r->cfg);
	if (!q)
		xalloc_die();
	q->deadline.kind = TN_CANCEL;
	q->tmo.kind = TN_TIMEOUT;
	return q;
}

static struct req *take_req(struct run *r)
{
	if (r->n_idle)
		return r->idle[--r->n_idle];
	return new_req(r);
}

/* A request that never reached libcurl still gets a record. */
static void fail_early(struct run *r, struct req *q, const char *why)
{
	int64_t now = now_ns(r);
	if (q->rec.start_ns == HR_NO_TIME)
		q->rec.start_ns = now;
	req_complete(q, CURLE_FAILED_INIT, now);
	q->rec.error = HR_ERR_TRANSPORT;
	free(q->rec.error_msg);
	q->rec.error_msg = xstrdup(why);
	retire(r, q, now);
}

#define SYSTEM_PROMPT_INDEX (1ULL << 50) /* prompt indices of the shared prompts */
#define PREFIX_PROMPT_INDEX (1ULL << 51)

/* Appends n tokens of shared prompt text number idx (JSON-safe): exact by
 * the run's tokenizer, else n words. */
static int shared_text(struct run *r, uint64_t idx, int n, int json, struct dynbuf *out)
{
	if (r->tok)
		return tokprompt_build(&r->tprompt, rng_hash(r->cfg.seed, RNG_STREAM_PROMPT, idx), n,
		                       json, out);
	return prompt_synthetic(out, r->cfg.seed, idx, n); /* JSON-safe words either way */
}

/* Opens a conversation's history h with a system prompt (raw text): chat's
 * system message, or for completions the text before the prompt. Returns 0
 * or -1 when h is full. */
static int add_system(struct dynbuf *h, bool chat, const char *text, size_t len)
{
	if (chat && dynbuf_addstr(h, "{\"role\":\"system\",\"content\":\"") < 0)
		return -1;
	if (json_escape_append(h, text ? text : "", len) < 0)
		return -1;
	return dynbuf_addstr(h, chat ? "\"}," : " ");
}

/* workload.mix (the request's lengths) and workload.prefix_prompts (one of
 * the shared prefixes, before the prompt) for a synthetic request. */
static void synthetic_extras(struct run *r, const struct issue *is, struct req_params *p)
{
	if (r->n_mix && p->isl < 0 && p->osl < 0) {
		double u = rng_uniform(r->cfg.seed, RNG_STREAM_MIX, is->req_id) * r->mix_total;
		int k = 0;
		while (k + 1 < r->n_mix && u >= r->mix[k].weight) {
			u -= r->mix[k].weight;
			k++;
		}
		p->isl = r->mix[k].isl;
		p->osl = r->mix[k].osl;
	}
	if (r->prefix_count > 0) {
		uint64_t i = (uint64_t)(rng_uniform(r->cfg.seed, RNG_STREAM_PREFIX, is->req_id) *
		                        r->prefix_count);
		if (i >= (uint64_t)r->prefix_count)
			i = (uint64_t)r->prefix_count - 1;
		dynbuf_reset(&r->prefix_buf);
		if (shared_text(r, PREFIX_PROMPT_INDEX + i, r->prefix_tokens, 1, &r->prefix_buf) == 0) {
			p->prefix = r->prefix_buf.data;
			p->prefix_len = r->prefix_buf.len;
			p->extra_tokens += r->prefix_tokens;
		}
	}
}

/* The dataset's prompt for this request: its entry's text, and its output
 * length when the dataset gives one (or, for ShareGPT, the reply's length:
 * in tokens with the run's tokenizer, else in words). A conversation's
 * system prompt opens its history at the first turn. */
static void dataset_prompt(struct run *r, const struct issue *is, struct req_params *p)
{
	const struct dataset *d = &r->dp.ds;
	const struct ds_entry *e;
	if (r->dp.sessions && is->conv) {
		const struct ds_session *s = &d->s[is->conv->dsess];
		e = &d->e[s->first + is->turn];
		const char *sys = ds_text(d, s->system);
		if (is->turn == 0 && sys && is->conv->hist.len == 0) {
			if (add_system(&is->conv->hist, r->cfg.h->history == EP_HIST_CHAT, sys,
			               s->system.len) < 0)
				dynbuf_reset(&is->conv->hist); /* too long: the turn goes without it */
			else if (r->tok) {
				long long n = tok_count(r->tok, sys, s->system.len);
				p->extra_tokens += n > 0 && n < INT32_MAX / 2 ? (int)n : 0;
			}
		}
	} else if (r->dp.order) { /* a fixed schedule replayed: the entries in time order */
		e = &d->e[dsplan_timed_entry(&r->dp, is->req_id)];
	} else {
		e = &d->e[dsplan_unit(&r->dp, is->req_id)];
	}
	p->extra = ds_text(d, e->extra);
	p->extra_len = p->extra ? e->extra.len : 0;
	p->media = ds_text(d, e->media);
	p->media_len = p->media ? e->media.len : 0;
	p->media_images = e->n_images;
	p->media_audio = e->n_audio;
	p->media_bytes = e->media_bytes;
	const char *text = ds_text(d, e->text);
	if (text) {
		p->text = text;
		p->text_len = e->text.len;
		p->isl = r->tok ? (int)tok_count(r->tok, text, e->text.len) : -2;
		if (p->isl < 0)
			p->isl = -2;
	} else if (e->isl > 0) {
		p->isl = e->isl; /* a trace's entry outside trace mode (a warm-up) */
	}
	const char *reply = ds_text(d, e->reply);
	if (e->osl > 0)
		p->osl = e->osl;
	else if (reply) {
		long long n = r->tok ? tok_count(r->tok, reply, e->reply.len)
		                     : (long long)ds_text_length(reply, e->reply.len, DS_UNIT_WORDS);
		p->osl = n > 0 ? (int)(n < HR_MAX_OSL ? n : HR_MAX_OSL) : -1;
	}
}

static void count_conn_error(struct run *r, int e, long os)
{
	if (e == HR_ERR_CONNECT || e == HR_ERR_RESET || e == HR_ERR_TRANSPORT) {
		r->conn_errors++; /* connection and socket errors */
		if (e == HR_ERR_CONNECT && os == EADDRNOTAVAIL)
			r->port_errors++; /* no local port (or address) left */
	}
}

/* A native request is over (h1_result res): its record, its slot. */
static void native_end(struct run *r, struct req *q, int res)
{
	int64_t now = now_ns(r);
	req_complete_native(q, res, now);
	count_conn_error(r, q->rec.error, q->conn.os_errno);
	retire(r, q, now);
}

/* After a completion: the next sends now, or, while the loop is reading
 * a batch, once every ready socket of it has been read (on_batch). */
static void pump_after_done(struct run *r)
{
	if (loop_in_reads(r->loop))
		r->pump_due = true;
	else
		run_pump(r);
}

static void on_batch(void *ud)
{
	struct run *r = ud;
	if (!r->pump_due)
		return;
	r->pump_due = false;
	run_pump(r);
	loop_kick(r->loop);
}

static void on_native_done(void *ud, struct req *q, int res)
{
	struct run *r = ud;
	native_end(r, q, res);
	pump_after_done(r);
}

static void send_one(struct run *r, const struct issue *is)
{
	struct req *q = take_req(r);
	struct req_params p = {
	    .seq = r->sent++,
	    .req_id = is->req_id,
	    .intended_ns = is->intended_ns,
	    .phase = (uint8_t)r->phase,
	    .session = is->session,
	    .turn = is->turn,
	    .isl = is->isl,
	    .osl = is->osl,
	    .hash_ids = is->hash_ids,
	    .n_hash = is->n_hash,
	    .history = is->conv ? &is->conv->hist : NULL,
	    .capture = is->conv && is->more,
	};
	if (r->have_dp && (!r->have_tp || r->dp.order))
		dataset_prompt(r, is, &p);
	else if (!r->have_tp)
		synthetic_extras(r, is, &p);
	if (is->doc_tokens > 0 && p.isl != -2) {
		/* agent sessions: this turn's new text carries a document too */
		long long base = p.isl >= 0 ? p.isl
		                            : rng_length(r->cfg.seed, RNG_STREAM_ISL, is->req_id,
		                                         r->cfg.isl.mean, r->cfg.isl.stddev, 1,
		                                         HR_MAX_ISL);
		base += is->doc_tokens;
		p.isl = base < HR_MAX_ISL ? (int)base : HR_MAX_ISL;
	}
	if (r->sys_hist.len) { /* the shared system prompt opens every conversation */
		bool with = !is->conv;
		if (!is->conv) {
			p.history = &r->sys_hist;
		} else if (is->turn == 0 && is->conv->hist.len == 0) {
			with = dynbuf_add(&is->conv->hist, r->sys_hist.data, r->sys_hist.len) == 0;
			if (!with)
				dynbuf_reset(&is->conv->hist);
		}
		if (with) /* (later turns carry it in their history) */
			p.extra_tokens += r->system_tokens;
	}
	r->phase_sent++;
	if (r->burn_ns > 0) { /* a deliberately slow client (see run_init) */
		int64_t until = mono_ns() + r->burn_ns;
		while (mono_ns() < until)
			;
	}
	activate(r, q);
	q->owner = is->conv;
	if (req_prepare(q, &p) < 0) {
		fail_early(r, q,
		           "cannot build the request body (prompt and conversation too long)");
		return;
	}
	if (r->cfg.native) {
		int res = req_launch_native(q, on_native_done, r);
		if (res != H1R_OK) { /* it could not go out: recorded now */
			native_end(r, q, res);
			return;
		}
		theap_set(&r->heap, &q->tmo, q->rec.start_ns + r->cfg.timeout_ms * 1000000LL);
	} else if (req_launch(q, add_to_loop, r->loop) < 0) {
		fail_early(r, q, "curl_multi_add_handle failed");
		return;
	}
	if (r->cancel_fraction > 0 &&
	    rng_uniform(r->cfg.seed, RNG_STREAM_CANCEL, is->req_id) < r->cancel_fraction)
		theap_set(&r->heap, &q->deadline, q->rec.start_ns + r->cancel_after_ns);
}

/* Takes q out of libcurl and records it as cancelled. */
static void abort_req(struct run *r, struct req *q, int64_t now, const char *why)
{
	if (r->cfg.native)
		req_abort_native(q);
	else
		loop_remove(r->loop, q->easy);
	req_cancel(q, now, why);
	retire(r, q, now);
}

static void abort_all(struct run *r, const char *why)
{
	int64_t now = now_ns(r);
	while (r->n_active)
		abort_req(r, r->active[r->n_active - 1], now, why);
}

static void on_done(void *ud, CURL *easy, CURLcode result)
{
	struct run *r = ud;
	char *p = NULL;
	int64_t now = now_ns(r);

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p);
	loop_remove(r->loop, easy);
	if (!p)
		return; /* not ours */
	struct req *q = (struct req *)p;
	req_complete(q, result, now);
	long os = 0;
	if (q->rec.error == HR_ERR_CONNECT)
		curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &os);
	count_conn_error(r, q->rec.error, os);
	retire(r, q, now);
	pump_after_done(r);
}

/* Handles every deadline that is due. */
static void run_timers(struct run *r)
{
	int64_t now = now_ns(r);
	struct tnode *t;
	while ((t = theap_pop_due(&r->heap, now))) {
		switch (t->kind) {
		case TN_TURN:
			load_turn_due(&r->load, (struct conv *)t); /* tn is the first member */
			break;
		case TN_CANCEL: {
			struct req *q = (struct req *)((char *)t - offsetof(struct req, deadline));
			abort_req(r, q, now, r->cancel_msg);
			break;
		}
		case TN_TIMEOUT: { /* target.timeout_s, native transport */
			struct req *q = (struct req *)((char *)t - offsetof(struct req, tmo));
			req_complete_native(q, H1R_TIMEOUT, now);
			retire(r, q, now);
			break;
		}
		case TN_GRACE:
			abort_all(r, "grace period over");
			break;
		default: /* TN_PUMP: run_pump looks */
			break;
		}
	}
}

/* Arms the pacer for the earliest deadline (now when a backlog is left),
 * unless it already is. */
static void rearm(struct run *r)
{
	struct tnode *m = theap_min(&r->heap);
	int64_t at;
	if (r->backlog)
		at = now_ns(r);
	else if (m)
		at = m->at - r->spin_ns;
	else
		return; /* a stale expiration only makes run_pump look once more */
	if (r->backlog && r->armed != INT64_MIN && r->armed <= at)
		return; /* already due */
	if (at == r->armed)
		return;
	r->armed = at;
	loop_timer_at(r->pacer, r->t0 + at);
}

static void on_pacer(void *ud, uint64_t expirations)
{
	struct run *r = ud;
	r->armed = INT64_MIN;
	if (!r->have_load)
		return;
	if (r->spin_ns > 0 && !r->backlog) {
		/* woken early on purpose: wait for the deadline on the CPU,
		 * which wakes far more punctually than the scheduler */
		struct tnode *m = theap_min(&r->heap);
		if (m && m->at - now_ns(r) <= r->spin_ns)
			while (now_ns(r) < m->at)
				;
	}
	struct tnode *due = theap_min(&r->heap);
	int64_t now = now_ns(r);
	if (due && due->at <= now) { /* how late the earliest deadline is handled */
		int64_t late = now - due->at;
		r->late[csample_late_bucket(late)]++;
		if (late > r->late_max)
			r->late_max = late;
	}
	run_timers(r);
	run_pump(r);
	loop_kick(r->loop);
}

/* workload.system_prompt, prefix_prompts and mix (docs/spec.md). */
static int shared_prompts_init(struct run *r, const struct spec *spec, char *err)
{
	dynbuf_init(&r->sys_hist, HR_MAX_BODY_BYTES * 4u);
	dynbuf_init(&r->prefix_buf, HR_MAX_BODY_BYTES * 4u);
	r->prefix_count = spec->workload.prefix_count;
	r->prefix_tokens = spec->workload.prefix_tokens;
	r->n_mix = spec->workload.n_mix;
	r->mix_total = 0;
	for (int i = 0; i < r->n_mix; i++) {
		r->mix[i] = spec->workload.mix[i];
		r->mix_total += r->mix[i].weight;
	}
	int n = spec->workload.system_tokens;
	if (n <= 0)
		return 0;
	r->system_tokens = n; /* exact by the tokenizer, when there is one */
	struct dynbuf text;
	dynbuf_init(&text, HR_MAX_BODY_BYTES * 4u);
	int rc = shared_text(r, SYSTEM_PROMPT_INDEX, n, 0, &text) < 0 ||
	         add_system(&r->sys_hist, r->cfg.h->history == EP_HIST_CHAT, text.data, text.len) < 0;
	dynbuf_release(&text);
	return rc ? errf(err, "workload.system_prompt: too long for a request body") : 0;
}

static void free_prompts(struct run *r)
{
	dynbuf_release(&r->sys_hist);
	dynbuf_release(&r->prefix_buf);
	if (r->have_dp) {
		dsplan_release(&r->dp);
		r->have_dp = false;
	}
	if (r->tok) {
		tokprompt_release(&r->tprompt);
		tok_free(r->tok);
		r->tok = NULL;
		r->cfg.tp = NULL;
		r->cfg.tok = NULL;
	}
}

/* target.prewarm: one idle request per slot this worker will hold (its
 * concurrency slots, or its share of a max_concurrency ceiling), each with
 * its connection opening now, on receipt of the schedule, well before time
 * zero; the phases then take them from the idle pool like any request
 * that has served one. */
static void prewarm(struct run *r)
{
	int n = r->sh.prof.slots > r->sh.warm.slots ? r->sh.prof.slots : r->sh.warm.slots;
	if (n > HR_WORKER_MAX_IN_FLIGHT)
		n = HR_WORKER_MAX_IN_FLIGHT;
	for (int i = 0; i < n; i++) {
		struct req *q = new_req(r);
		if (r->n_idle == r->cap) { /* idle grows with active (activate) */
			r->cap = r->cap ? r->cap * 2 : 64;
			r->active = xrealloc(r->active, (size_t)r->cap * sizeof *r->active);
			r->idle = xrealloc(r->idle, (size_t)r->cap * sizeof *r->idle);
		}
		h1_open(&q->conn);
		r->idle[r->n_idle++] = q;
	}
	r->prewarmed = n;
}

int run_init(struct run *r, struct loop *loop, struct outbox *ob, const struct spec *spec,
             const struct share *sh, uint32_t worker, char *err)
{
	memset(r, 0, sizeof *r);
	if (req_cfg_init(&r->cfg, spec, worker, err) < 0)
		return -1;
	r->cfg.allow = &sh->net;
	if (r->cfg.tgt) {
		r->cfg.tgt->allow = &sh->net;
		r->cfg.tgt->loop = loop;
	}
	if (spec->workload.tokenizer) {
		/* prompts of exact token lengths, sliced from the bundled corpus */
		char terr[HR_ERRLEN];
		size_t clen;
		const char *corpus = corpus_text(&clen);
		if (tok_load(spec->workload.tokenizer, &r->tok, terr) < 0 ||
		    tokprompt_init(&r->tprompt, r->tok, corpus, clen, terr) < 0) {
			errf(err, "workload.tokenizer: %s", terr);
			tok_free(r->tok);
			r->tok = NULL;
			req_cfg_release(&r->cfg);
			return -1;
		}
		r->cfg.tp = &r->tprompt;
		r->cfg.tok = r->tok;
	}
	r->sh = *sh;
	r->agent = spec->workload.agent;
	if (shared_prompts_init(r, spec, err) < 0) {
		free_prompts(r);
		req_cfg_release(&r->cfg);
		return -1;
	}
	if (sh->has_dataset) {
		if (dsplan_init(&r->dp, sh, r->cfg.seed, err) < 0) {
			free_prompts(r);
			req_cfg_release(&r->cfg);
			return -1;
		}
		r->have_dp = true;
	}
	if (sh->prof.mode == SPEC_LOAD_TRACE) {
		int rc;
		if (r->have_dp) { /* a mooncake_trace dataset, or a fixed schedule */
			struct trace tr;
			dsplan_trace(&r->dp, &tr);
			rc = trace_plan_build_from(&r->tp, &tr, sh, err);
		} else {
			rc = trace_plan_build(&r->tp, spec, sh, err);
		}
		if (rc < 0) {
			free_prompts(r);
			req_cfg_release(&r->cfg);
			return -1;
		}
		r->have_tp = true;
	}
	r->loop = loop;
	r->ob = ob;
	theap_init(&r->heap);
	tnode_init(&r->grace, TN_GRACE);
	r->armed = INT64_MIN;
	r->pacer = loop_timer_new(loop, on_pacer, r);
	if (!r->pacer) {
		errf(err, "timerfd: cannot create the pacer");
		if (r->have_tp)
			trace_plan_release(&r->tp);
		free_prompts(r);
		req_cfg_release(&r->cfg);
		return -1;
	}
	loop_timer_priority(r->pacer);
	/* Burn this much CPU per send: makes a worker slow on purpose, so that
	 * tests and demonstrations can show a client-bound run. */
	const char *burn = getenv("HEADROOM_WORKER_BURN_US");
	if (burn && *burn) {
		double us = atof(burn);
		if (us > 0 && us <= 1e6)
			r->burn_ns = (int64_t)(us * 1000);
	}
	const char *spin = getenv("HEADROOM_WORKER_SPIN_US");
	if (spin && *spin) {
		double us = atof(spin); /* range first: converting 1e30 or NaN is undefined */
		if (us >= 0 && us <= 1000)
			r->spin_ns = (int64_t)(us * 1000);
	}
	r->grace_ns = (int64_t)(sh->grace_s * 1e9 + 0.5);
	r->cancel_fraction = sh->cancel_fraction;
	r->cancel_after_ns = (int64_t)(sh->cancel_after_s * 1e9 + 0.5);
	char num[32];
	fmt_double(num, sh->cancel_after_s);
	snprintf(r->cancel_msg, sizeof r->cancel_msg, "cancelled by policy after %s s", num);
	loop_on_done(loop, on_done, r);
	loop_on_batch(loop, on_batch, r);
	if (r->cfg.native && spec->target.prewarm)
		prewarm(r);
	return 0;
}

void run_release(struct run *r)
{
	for (int i = 0; i < r->n_active; i++) {
		if (!r->cfg.native)
			loop_remove(r->loop, r->active[i]->easy);
		req_free(r->active[i]);
	}
	for (int i = 0; i < r->n_idle; i++)
		req_free(r->idle[i]);
	free(r->active);
	free(r->idle);
	if (r->have_load)
		load_release(&r->load);
	if (r->have_tp)
		trace_plan_release(&r->tp);
	theap_release(&r->heap);
	if (r->pacer)
		loop_timer_free(r->loop, r->pacer);
	req_cfg_release(&r->cfg);
	free_prompts(r);
	loop_on_done(r->loop, NULL, NULL);
	loop_on_batch(r->loop, NULL, NULL);
	memset(r, 0, sizeof *r);
}

void run_begin(struct run *r, int phase, int64_t t0, int64_t phase_start_ns)
{
	if (r->have_load)
		run_end_phase(r);
	r->t0 = t0;
	r->cfg.t0 = t0;
	r->begun = true;
	r->phase = phase;
	r->phase_sent = r->phase_completed = 0;
	r->grace_armed = false;
	struct load_cfg lc = {
	    .ph = phase == HR_PHASE_WARMUP ? &r->sh.warm : &r->sh.prof,
	    .phase = phase,
	    .worker = r->sh.worker,
	    .workers = r->sh.workers,
	    .seed = r->cfg.seed,
	    .req_offset = r->sh.req_offset,
	    .sessions = r->sh.sessions || (r->have_dp && r->dp.sessions),
	    .turns = r->sh.turns,
	    .think_s = r->sh.think_s,
	    .agent = &r->agent,
	    .tp = r->have_tp ? &r->tp : NULL,
	    .dp = r->have_dp ? &r->dp : NULL,
	    .heap = &r->heap,
	};
	load_init(&r->load, &lc);
	r->have_load = true;
	load_begin(&r->load, phase_start_ns);
	run_pump(r);
	loop_kick(r->loop);
}

/* Sending is over: in-flight profiling requests get the grace period. */
static void on_exhausted(struct run *r)
{
	if (r->grace_armed)
		return;
	r->grace_armed = true;
	if (r->load.dropped)
		fprintf(stderr,
		        "headroom-worker[w%d]: %llu arrivals were still waiting for a slot when "
		        "the duration ended; they were not sent\n",
		        r->sh.worker, (unsigned long long)r->load.dropped);
	if (r->phase == HR_PHASE_PROFILING && r->n_active > 0)
		theap_set(&r->heap, &r->grace, r->load.ended_at + r->grace_ns);
}

/* Whether this wake-up of the loop may send once more. */
static bool budget_left(struct run *r)
{
	struct loop_stats ls;
	loop_get_stats(r->loop, &ls);
	if (ls.wakeups != r->wake) {
		r->wake = ls.wakeups;
		r->wake_sends = 0;
		r->wake_start = mono_ns();
		return true;
	}
	if (r->wake_sends >= WAKEUP_SENDS)
		return false;
	return r->wake_sends % 8 != 0 || mono_ns() - r->wake_start < WAKEUP_SEND_NS;
}

void run_pump(struct run *r)
{
	if (!r->have_load)
		return;
	struct issue is;
	int v = LOAD_WAIT;
	r->backlog = false;
	r->pump_due = false;
	for (int n = 0;; n++) {
		if (n == PUMP_BATCH || !budget_left(r)) {
			r->backlog = true; /* the rest after the pending events */
			break;
		}
		v = load_next(&r->load, now_ns(r), &is);
		if (v != LOAD_SEND)
			break;
		send_one(r, &is);
		r->wake_sends++;
	}
	if (v == LOAD_EXHAUSTED)
		on_exhausted(r);
	rearm(r);
}

void run_cancel(struct run *r, const char *why)
{
	if (r->have_load)
		load_stop(&r->load, now_ns(r));
	abort_all(r, why);
}

bool run_phase_finished(struct run *r)
{
	return r->have_load && r->n_active == 0 && load_finished(&r->load);
}

void run_end_phase(struct run *r)
{
	if (!r->have_load)
		return;
	theap_del(&r->heap, &r->grace);
	load_release(&r->load);
	r->have_load = false;
}

void run_sample(struct run *r, struct csample *s)
{
	s->in_flight = r->n_active;
	s->queued = 0;
	s->queued_age_ns = 0;
	if (r->have_load)
		s->queued = (int64_t)load_queued(&r->load, now_ns(r), &s->queued_age_ns);
	memcpy(s->late, r->late, sizeof s->late);
	s->late_max_ns = r->late_max;
	memset(r->late, 0, sizeof r->late);
	r->late_max = 0;
	s->conn_errors = (int64_t)r->conn_errors;
	s->port_errors = (int64_t)r->port_errors;
	s->sent = (int64_t)r->sent;
	s->completed = (int64_t)r->completed;
	s->phase = r->phase;
}
