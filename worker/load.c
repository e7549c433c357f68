/* load.c - the load model of one phase: slots, paced arrivals, trace
 * replay, sessions (see load.h). */
#include "load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "record.h"
#include "rng.h"
#include "split.h"
#include "util.h"

/* Clamped (ns_of_s): a trace entry at up to 1e9 s replayed at a speedup of
 * 1e-6 is 1e15 s away, far past int64 nanoseconds. */
static int64_t ns_of(double s)
{
	return ns_of_s(s);
}

/* --- the trace plan ------------------------------------------------------ */

int trace_plan_build(struct trace_plan *tp, const struct spec *spec, const struct share *sh,
                     char *err)
{
	memset(tp, 0, sizeof *tp);
	if (!spec->workload.trace)
		return errf(err, "trace mode without a trace");
	struct trace tr;
	if (trace_parse(spec->workload.trace, spec->workload.trace_len, &tr, err) < 0)
		return -1;
	return trace_plan_build_from(tp, &tr, sh, err);
}

int trace_plan_build_from(struct trace_plan *tp, struct trace *tr, const struct share *sh,
                          char *err)
{
	memset(tp, 0, sizeof *tp);
	tp->tr = *tr;
	memset(tr, 0, sizeof *tr);
	(void)err;
	tp->start_s = sh->trace_start_s;
	tp->speedup = sh->speedup > 0 ? sh->speedup : 1;
	const struct share_phase *ph = &sh->prof;
	size_t n = tp->tr.n;
	uint32_t w = (uint32_t)sh->worker, nw = (uint32_t)sh->workers;

	tp->sess_of = xmalloc(n * sizeof *tp->sess_of);
	tp->starts = xmalloc(n * sizeof *tp->starts);
	tp->sess = xmalloc(n * sizeof *tp->sess);
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	int32_t *tab = xmalloc(cap * sizeof *tab); /* session id -> index in sess */
	for (size_t i = 0; i < cap; i++)
		tab[i] = -1;
	for (size_t i = 0; i < n; i++)
		tp->sess_of[i] = -1;

	uint64_t counted = 0;
	for (size_t i = 0; i < n; i++) {
		const struct trace_entry *e = &tp->tr.e[i];
		double t = e->t_ms / 1000.0;
		if (t < sh->trace_start_s)
			continue;
		if (sh->trace_end_s > 0 && t >= sh->trace_end_s)
			break; /* sorted by time */
		if (ph->requests > 0 && counted >= (uint64_t)ph->requests)
			break;
		if (ph->duration_s > 0 && (t - sh->trace_start_s) / tp->speedup >= ph->duration_s)
			break;
		counted++;
		if (!e->session) {
			if (i % nw == w)
				tp->starts[tp->n_starts++] = (uint32_t)i;
			continue;
		}
		uint64_t h = trace_session_hash(e->session);
		if (h % nw != w)
			continue;
		size_t pos = (size_t)h & (cap - 1);
		while (tab[pos] >= 0 &&
		       strcmp(tp->tr.e[tp->sess[tab[pos]].first].session, e->session))
			pos = (pos + 1) & (cap - 1);
		if (tab[pos] < 0) {
			tab[pos] = (int32_t)tp->n_sess;
			tp->sess[tp->n_sess].first = (uint32_t)i;
			tp->sess[tp->n_sess].n = 0;
			tp->n_sess++;
			tp->starts[tp->n_starts++] = (uint32_t)i;
		}
		tp->sess_of[i] = tab[pos];
		tp->sess[tab[pos]].n++;
	}
	free(tab);
	uint32_t off = 0;
	for (size_t s = 0; s < tp->n_sess; s++) {
		tp->sess[s].off = off;
		off += tp->sess[s].n;
		tp->sess[s].n = 0;
	}
	tp->turns = xmalloc((off ? off : 1) * sizeof *tp->turns);
	for (size_t i = 0; i < n; i++) {
		int32_t s = tp->sess_of[i];
		if (s >= 0)
			tp->turns[tp->sess[s].off + tp->sess[s].n++] = (uint32_t)i;
	}
	return 0;
}

void trace_plan_release(struct trace_plan *tp)
{
	trace_release(&tp->tr);
	free(tp->starts);
	free(tp->sess_of);
	free(tp->sess);
	free(tp->turns);
	memset(tp, 0, sizeof *tp);
}

/* Intended time of trace entry idx. */
static int64_t entry_at(const struct load *l, uint32_t idx)
{
	const struct trace_plan *tp = l->c.tp;
	return l->start + ns_of((tp->tr.e[idx].t_ms / 1000.0 - tp->start_s) / tp->speedup);
}

/* --- conversations ------------------------------------------------------- */

static struct conv *conv_new(struct load *l)
{
	struct conv *c = l->free_convs;
	if (c) {
		l->free_convs = c->next;
	} else {
		c = xcalloc(1, sizeof *c);
		tnode_init(&c->tn, TN_TURN);
		dynbuf_init(&c->hist, REQ_MAX_CONVERSATION);
	}
	c->next = NULL;
	c->s = 0;
	c->session = 0;
	c->turns = 1;
	c->turn = 0;
	c->due_ns = 0;
	c->holds_slot = c->in_flight = c->queued = false;
	c->entries = NULL;
	dynbuf_reset(&c->hist);
	c->aprev = NULL;
	c->anext = l->active;
	if (l->active)
		l->active->aprev = c;
	l->active = c;
	l->n_active_convs++;
	return c;
}

static void push_ready(struct load *l, struct conv *c)
{
	c->next = NULL;
	c->queued = true;
	if (l->rq_tail)
		l->rq_tail->next = c;
	else
		l->rq_head = c;
	l->rq_tail = c;
}

static struct conv *pop_ready(struct load *l)
{
	struct conv *c = l->rq_head;
	l->rq_head = c->next;
	if (!l->rq_head)
		l->rq_tail = NULL;
	c->next = NULL;
	c->queued = false;
	return c;
}

static void free_slot(struct load *l, int64_t now)
{
	if (l->free_n >= l->slots)
		return;
	l->free_at[(l->free_head + l->free_n) % l->slots] = now;
	l->free_n++;
}

/* The conversation is over (done, failed, or abandoned). Not queued. */
static void conv_end(struct load *l, struct conv *c, int64_t now)
{
	theap_del(l->c.heap, &c->tn);
	if (c->aprev)
		c->aprev->anext = c->anext;
	else
		l->active = c->anext;
	if (c->anext)
		c->anext->aprev = c->aprev;
	c->aprev = c->anext = NULL;
	l->n_active_convs--;
	if (c->holds_slot && !l->ended)
		free_slot(l, now);
	dynbuf_reset(&c->hist);
	c->next = l->free_convs;
	l->free_convs = c;
}

/* --- generators ---------------------------------------------------------- */

/* Rate mode: the next arrival that is ours (next_k, next_ns), or gen_done. */
static void gen_advance(struct load *l)
{
	const struct share_phase *ph = l->c.ph;
	int64_t dur = ph->rate.duration_s > 0 ? ns_of(ph->rate.duration_s) : INT64_MAX;
	uint64_t total = (uint64_t)ph->rate.total_requests;
	for (;;) {
		/* with sessions the count limits turns (l->limit), not arrivals */
		if (!l->c.sessions && total > 0 && l->sched.k >= total) {
			l->gen_done = true;
			return;
		}
		uint64_t k = l->sched.k;
		int64_t t = sched_next(&l->sched);
		if (t >= dur) {
			l->gen_done = l->gen_done_time = true;
			return;
		}
		if (split_takes(k, l->c.workers, l->c.worker)) {
			l->next_k = k;
			l->next_ns = l->start + t;
			return;
		}
	}
}

/* Trace mode: the next start's time, or gen_done. */
static void gen_peek(struct load *l)
{
	if (l->tpos >= l->c.tp->n_starts) {
		l->gen_done = true;
		return;
	}
	l->next_ns = entry_at(l, l->c.tp->starts[l->tpos]);
}

static int64_t slot_open_at(const struct load *l, int i)
{
	const struct share_phase *ph = l->c.ph;
	if (ph->ramp_s <= 0)
		return l->start;
	int total = ph->total_slots > 0 ? ph->total_slots : ph->slots * l->c.workers;
	double j = (double)split_global((uint64_t)i, l->c.workers, l->c.worker);
	return l->start + ns_of(ph->ramp_s * j / (total > 0 ? total : 1));
}

static void open_slots(struct load *l, int64_t now)
{
	while (l->opened < l->slots) {
		int64_t at = slot_open_at(l, l->opened);
		if (at > now)
			break;
		free_slot(l, at);
		l->opened++;
	}
}

/* --- ending -------------------------------------------------------------- */

static void end_sending(struct load *l, int64_t now, bool by_time)
{
	if (l->ended)
		return;
	l->ended = true;
	l->ended_at = by_time && l->end != INT64_MAX ? l->end : now;
	theap_del(l->c.heap, &l->pump);
	theap_del(l->c.heap, &l->endn);
	/* what was due when the time ran out but never went (a ceiling held
	 * it back, or the worker was late) */
	if (!by_time) {
		/* count limit, exhaustion or STOP: nothing was owed */
	} else if (l->mode == SPEC_LOAD_RATE) {
		while (!l->gen_done && l->next_ns <= now && l->next_ns < l->end) {
			l->dropped++;
			gen_advance(l);
		}
	} else if (l->mode == SPEC_LOAD_TRACE) {
		while (!l->gen_done && l->next_ns <= now && l->next_ns < l->end) {
			l->dropped++;
			l->tpos++;
			gen_peek(l);
		}
	}
	while (l->rq_head) {
		if (by_time && l->rq_head->due_ns < l->end)
			l->dropped++;
		pop_ready(l);
	}
	/* pending turns are abandoned; a turn in flight ends its conversation
	 * when it completes */
	struct conv *c = l->active;
	while (c) {
		struct conv *nx = c->anext;
		if (!c->in_flight)
			conv_end(l, c, now);
		c = nx;
	}
}

/* --- issuing ------------------------------------------------------------- */

static void count_issue(struct load *l, int64_t now)
{
	l->in_flight++;
	l->issued++;
	if (l->limit >= 0 && l->issued >= l->limit)
		end_sending(l, now, false);
}

static void issue_single(struct load *l, struct issue *is, int64_t intended, uint64_t req_id,
                         int64_t now)
{
	memset(is, 0, sizeof *is);
	is->intended_ns = intended;
	is->req_id = req_id;
	is->isl = is->osl = -1;
	count_issue(l, now);
}

static void issue_turn(struct load *l, struct conv *c, struct issue *is, int64_t now)
{
	int j = c->turn++;
	memset(is, 0, sizeof *is);
	is->conv = c;
	is->session = c->session;
	is->turn = (uint32_t)j;
	is->intended_ns = c->due_ns;
	if (c->entries) {
		uint32_t idx = c->entries[j];
		const struct trace_entry *e = &l->c.tp->tr.e[idx];
		is->req_id = idx;
		is->isl = e->isl;
		is->osl = e->osl;
		is->hash_ids = e->hash_ids;
		is->n_hash = e->n_hash;
	} else {
		uint64_t key = c->s * LOAD_TURN_STRIDE + (uint64_t)j;
		is->req_id = key + l->req_off;
		is->isl = is->osl = -1;
		const struct spec_agent *a = l->c.agent;
		/* agent sessions: a later turn may bring a large document (a
		 * tool's result, a file) into the context */
		if (a && j > 0 && a->doc_probability > 0 && !(l->c.dp && l->c.dp->sessions) &&
		    rng_uniform(l->c.seed, RNG_STREAM_DOC, key) < a->doc_probability)
			is->doc_tokens = rng_length(l->c.seed, RNG_STREAM_DOC_LEN, key,
			                            a->doc_tokens.mean, a->doc_tokens.stddev, 1,
			                            HR_MAX_ISL);
	}
	is->more = c->turn < c->turns;
	c->in_flight = true;
	count_issue(l, now);
}

/* A new synthetic session starting at intended. */
static struct conv *new_session(struct load *l, uint64_t s, int64_t intended)
{
	struct conv *c = conv_new(l);
	c->s = s;
	c->session = (uint32_t)(s + 1);
	if (l->c.dp && l->c.dp->sessions) { /* a conversation of the dataset */
		c->dsess = dsplan_unit(l->c.dp, s);
		c->turns = (int)l->c.dp->ds.s[c->dsess].n;
	} else {
		c->turns = rng_length(l->c.seed, RNG_STREAM_TURNS, s, l->c.turns.mean,
		                      l->c.turns.stddev, 1, HR_MAX_TURNS);
	}
	c->due_ns = intended;
	return c;
}

static int next_concurrency(struct load *l, int64_t now, struct issue *is)
{
	open_slots(l, now);
	if (l->rq_head) {
		issue_turn(l, pop_ready(l), is, now);
		return LOAD_SEND;
	}
	if (l->free_n > 0) {
		int64_t intended = l->free_at[l->free_head];
		l->free_head = (l->free_head + 1) % l->slots;
		l->free_n--;
		uint64_t u = l->units++;
		if (l->c.sessions) {
			struct conv *c = new_session(
			    l, split_global(u, l->c.workers, l->c.worker), intended);
			c->holds_slot = true;
			issue_turn(l, c, is, now);
		} else {
			const struct share_phase *ph = l->c.ph;
			issue_single(l, is, intended, ph->req_id_base + u * ph->req_id_stride, now);
		}
		return LOAD_SEND;
	}
	if (l->opened < l->slots) {
		int64_t at = slot_open_at(l, l->opened);
		if (at < l->end) {
			theap_set(l->c.heap, &l->pump, at);
			return LOAD_WAIT;
		}
		l->opened = l->slots; /* the rest open too late to send anything */
	}
	if (l->in_flight == 0 && l->n_active_convs == 0) {
		end_sending(l, now, true); /* every slot we have is closed for good */
		return LOAD_EXHAUSTED;
	}
	return LOAD_WAIT;
}

static void take_arrival(struct load *l, struct issue *is, int64_t now)
{
	int64_t intended = l->next_ns;
	if (l->mode == SPEC_LOAD_RATE) {
		uint64_t k = l->next_k;
		gen_advance(l);
		if (l->c.sessions)
			issue_turn(l, new_session(l, k, intended), is, now);
		else
			issue_single(l, is, intended, l->req_off + k, now);
		return;
	}
	const struct trace_plan *tp = l->c.tp;
	uint32_t idx = tp->starts[l->tpos++];
	gen_peek(l);
	int32_t s = tp->sess_of[idx];
	if (s >= 0) {
		struct conv *c = conv_new(l);
		c->entries = &tp->turns[tp->sess[s].off];
		c->turns = (int)tp->sess[s].n;
		c->session = idx + 1;
		c->due_ns = intended;
		issue_turn(l, c, is, now);
		return;
	}
	const struct trace_entry *e = &tp->tr.e[idx];
	issue_single(l, is, intended, idx, now);
	is->isl = e->isl;
	is->osl = e->osl;
	is->hash_ids = e->hash_ids;
	is->n_hash = e->n_hash;
}

static int next_paced(struct load *l, int64_t now, struct issue *is)
{
	if (l->gen_done && l->n_active_convs == 0) {
		end_sending(l, now, l->gen_done_time);
		return LOAD_EXHAUSTED;
	}
	bool gen_due = !l->gen_done && l->next_ns <= now;
	bool turn_due = l->rq_head != NULL; /* queued turns are due */
	/* The time is up and what is left was waiting for a slot (now, or
	 * since the ceiling last blocked, if a completion came in before the
	 * end's timer): it is not sent. A worker that is merely late still
	 * catches up. */
	if (now >= l->end && l->ceiling > 0 &&
	    (l->in_flight >= l->ceiling || (l->held && (gen_due || turn_due)))) {
		end_sending(l, now, true);
		return LOAD_EXHAUSTED;
	}
	if (l->ceiling > 0 && l->in_flight >= l->ceiling) {
		/* until a completion asks again, whatever falls due waits for
		 * the ceiling */
		l->held = true;
		theap_del(l->c.heap, &l->pump); /* a completion asks again */
		return LOAD_WAIT;
	}
	l->held = false;
	if (l->rq_head && (!gen_due || l->rq_head->due_ns <= l->next_ns)) {
		issue_turn(l, pop_ready(l), is, now);
		return LOAD_SEND;
	}
	if (gen_due) {
		take_arrival(l, is, now);
		return LOAD_SEND;
	}
	if (!l->gen_done)
		theap_set(l->c.heap, &l->pump, l->next_ns);
	return LOAD_WAIT;
}

/* --- the interface ------------------------------------------------------- */

void load_init(struct load *l, const struct load_cfg *cfg)
{
	memset(l, 0, sizeof *l);
	l->c = *cfg;
	const struct share_phase *ph = cfg->ph;
	l->mode = ph->mode;
	tnode_init(&l->pump, TN_PUMP);
	tnode_init(&l->endn, TN_PUMP);
	l->req_off = (cfg->phase == HR_PHASE_WARMUP ? LOAD_WARMUP_OFFSET : 0) + cfg->req_offset;
	l->limit = -1;
	l->end = INT64_MAX;
	if (l->c.workers < 1)
		l->c.workers = 1;
	switch (l->mode) {
	case SPEC_LOAD_CONCURRENCY:
		l->slots = ph->slots < 1 ? 1 : ph->slots;
		l->free_at = xcalloc((size_t)l->slots, sizeof *l->free_at);
		if (ph->duration_s > 0)
			l->end = ns_of(ph->duration_s);
		else
			l->limit = ph->requests > 0 ? ph->requests : 0;
		break;
	case SPEC_LOAD_RATE: {
		l->ceiling = ph->slots;
		sched_init(&l->sched, ph->rate.law, ph->rate.rate, ph->rate.smoothness,
		           ph->rate.ramp_s, cfg->seed, ph->rate.stream);
		sched_set_batch(&l->sched, ph->rate.batch_size, ph->rate.jitter_s);
		int64_t total = ph->rate.total_requests;
		if (total > 0) {
			l->limit = split_even(total, l->c.workers, cfg->worker);
		}
		if (ph->rate.duration_s > 0)
			l->end = ns_of(ph->rate.duration_s);
		break;
	}
	default: /* trace: the plan holds the limits */
		l->ceiling = ph->slots;
		if (ph->duration_s > 0)
			l->end = ns_of(ph->duration_s);
		break;
	}
	if (l->mode != SPEC_LOAD_CONCURRENCY && l->ceiling <= 0)
		l->ceiling = HR_WORKER_MAX_IN_FLIGHT; /* a safety cap, not the user's */
}

void load_begin(struct load *l, int64_t start)
{
	l->start = start;
	if (l->end != INT64_MAX)
		l->end += start;
	l->begun = true;
	if (l->mode == SPEC_LOAD_RATE)
		gen_advance(l);
	else if (l->mode == SPEC_LOAD_TRACE)
		gen_peek(l);
	/* be asked at the end itself: arrivals the ceiling holds back then
	 * are dropped (next_paced) */
	if (l->mode != SPEC_LOAD_CONCURRENCY && l->ceiling > 0 && l->end != INT64_MAX)
		theap_set(l->c.heap, &l->endn, l->end);
}

int load_next(struct load *l, int64_t now, struct issue *is)
{
	if (!l->begun)
		return LOAD_WAIT;
	if (l->ended)
		return LOAD_EXHAUSTED;
	/* Concurrency: nothing starts at or after the end. Paced modes only
	 * generate what is scheduled before the end, and send it even when
	 * the worker is late (catch-up), unless the ceiling holds it back. */
	if (l->mode == SPEC_LOAD_CONCURRENCY && now >= l->end) {
		end_sending(l, now, true);
		return LOAD_EXHAUSTED;
	}
	if (l->limit >= 0 && l->issued >= l->limit) {
		end_sending(l, now, false);
		return LOAD_EXHAUSTED;
	}
	if (l->mode == SPEC_LOAD_CONCURRENCY)
		return next_concurrency(l, now, is);
	return next_paced(l, now, is);
}

void load_done(struct load *l, struct conv *c, int64_t now, bool ok)
{
	if (l->in_flight > 0)
		l->in_flight--;
	if (!c) {
		if (l->mode == SPEC_LOAD_CONCURRENCY && !l->ended)
			free_slot(l, now);
		return;
	}
	c->in_flight = false;
	if (!ok || c->turn >= c->turns || l->ended) {
		conv_end(l, c, now);
		return;
	}
	int64_t due;
	if (c->entries) {
		due = entry_at(l, c->entries[c->turn]);
		if (due < now)
			due = now;
	} else if (l->c.dp && l->c.dp->sessions) {
		/* the dataset's 'delay' before this turn, else none */
		const struct dataset *d = &l->c.dp->ds;
		double ms = d->e[d->s[c->dsess].first + (uint32_t)c->turn].delay_ms;
		due = now + (ms > 0 ? ns_of(ms / 1000.0) : 0);
	} else {
		uint64_t key = c->s * LOAD_TURN_STRIDE + (uint64_t)c->turn;
		double mean = l->c.think_s.mean, sd = l->c.think_s.stddev;
		const struct spec_agent *a = l->c.agent;
		if (a && a->n_tool) { /* agent sessions: which kind of tool call this was */
			double tot = 0;
			for (int i = 0; i < a->n_tool; i++)
				tot += a->tool[i].weight;
			double u = rng_uniform(l->c.seed, RNG_STREAM_TOOL, key) * tot;
			int i = 0;
			while (i < a->n_tool - 1 && u >= a->tool[i].weight) {
				u -= a->tool[i].weight;
				i++;
			}
			mean = a->tool[i].mean;
			sd = a->tool[i].stddev;
		}
		double th = mean;
		if (sd > 0)
			th += sd * rng_normal(l->c.seed, RNG_STREAM_THINK, key);
		due = now + (th > 0 ? ns_of(th) : 0);
	}
	if (due >= l->end) { /* nothing starts at or after the end */
		conv_end(l, c, now);
		return;
	}
	c->due_ns = due;
	if (due <= now)
		push_ready(l, c);
	else
		theap_set(l->c.heap, &c->tn, due);
}

void load_turn_due(struct load *l, struct conv *c)
{
	if (!l->ended && !c->queued && !c->in_flight)
		push_ready(l, c);
}

void load_stop(struct load *l, int64_t now)
{
	l->stopped = true;
	end_sending(l, now, false);
}

void load_release(struct load *l)
{
	theap_del(l->c.heap, &l->pump);
	theap_del(l->c.heap, &l->endn);
	while (l->active) {
		struct conv *c = l->active;
		l->active = c->anext;
		theap_del(l->c.heap, &c->tn);
		dynbuf_release(&c->hist);
		free(c);
	}
	while (l->free_convs) {
		struct conv *c = l->free_convs;
		l->free_convs = c->next;
		dynbuf_release(&c->hist);
		free(c);
	}
	free(l->free_at);
	memset(l, 0, sizeof *l);
}

/* --- self-telemetry ------------------------------------------------------- */

/* Counts on a copy: the generators only move the copy's cursor (sched, next_*,
 * tpos, gen_done), so peeking ahead changes nothing the phase will send. */
uint64_t load_queued(const struct load *l, int64_t now, int64_t *oldest)
{
	const uint64_t cap = 1000000; /* a bound on the work of one look */
	uint64_t n = 0;
	int64_t first = INT64_MAX;
	if (!l->begun || l->ended) {
		*oldest = 0;
		return 0;
	}
	for (const struct conv *c = l->rq_head; c && n < cap; c = c->next) {
		if (c->due_ns > now)
			continue;
		n++;
		if (c->due_ns < first)
			first = c->due_ns;
	}
	if (l->mode == SPEC_LOAD_CONCURRENCY) {
		bool more = l->limit < 0 || l->issued < l->limit;
		for (int i = 0; more && i < l->free_n && n < cap; i++) {
			int64_t at = l->free_at[(l->free_head + i) % l->slots];
			if (at > now)
				break;
			n++;
			if (at < first)
				first = at;
		}
	} else {
		struct load cp = *l;
		int64_t limit = l->limit < 0 ? INT64_MAX : l->limit - l->issued;
		for (int64_t k = 0; k < limit && n < cap; k++) {
			if (cp.gen_done || cp.next_ns > now || cp.next_ns >= cp.end)
				break;
			n++;
			if (cp.next_ns < first)
				first = cp.next_ns;
			if (cp.mode == SPEC_LOAD_RATE) {
				gen_advance(&cp);
			} else {
				cp.tpos++;
				gen_peek(&cp);
			}
		}
	}
	*oldest = n ? now - first : 0;
	return n;
}
