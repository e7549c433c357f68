/* model.c - the timing model of headroom-mock: when each step of each
 * response is due.
 *
 * Off (the default) it is the simplest server: every response runs on its
 * own, the first step comes TTFT after the request was taken and each next
 * one ITL after the previous one was due (an absolute schedule, so a late
 * wake-up does not push every later token back).
 *
 * On (--max-batch, --prefill-ms-per-1k, --decode-ms, --decode-ms-per-seq)
 * it is an engine loop of continuous batching, like vLLM's scheduler:
 *
 *   - A new sequence joins the FIFO queue (waiting). A step is formed when
 *     it starts: queued sequences are admitted, oldest first, while fewer
 *     than max_batch run. A sequence that arrives while a step runs waits
 *     for the next one (an arrival at the very instant a step starts, such
 *     as several requests read in one wake-up of an idle server, joins it).
 *   - Prefill is serialised with decoding: the step that admits sequences
 *     is longer by their prefill times. With n sequences running in it
 *     (the admitted ones included), a step lasts
 *
 *       decode + decode_per_seq * n + sum over admitted (ttft + prefill * prompt)
 *
 *     (decode = --decode-ms, decode_per_seq = --decode-ms-per-seq, ttft =
 *     --ttft-ms, prefill = --prefill-ms-per-1k / 1000 per prompt token).
 *   - When a step ends every sequence in it has one more token: an admitted
 *     one its first (so TTFT = queueing + the rest of the step in progress
 *     + its admitting step), the others their next (so ITL = step length,
 *     growing with n and with the prefills of newcomers). A sequence with
 *     all its max_tokens frees its slot; the next step starts at once while
 *     anything runs or waits.
 *
 * Steps run back to back on simulated time: model_advance(now) finishes
 * every step that ended by now and forms the next one at exactly the
 * previous end, so the schedule depends only on the arrival times, not on
 * when the event loop wakes. The server calls it before handling each
 * batch of events and arms its timer at model_deadline(). A stream's chunk
 * is due when the step that completes it ends: the model then sets its
 * next_ns and calls wake() so that the server puts the connection in its
 * deadline heap; until then next_ns is MOCK_NEVER and the connection costs
 * nothing. A stream whose client reads slowly falls behind its sequence
 * (the engine does not wait for it, as a real one does not) and sends its
 * ready chunks as fast as it can write. A step of zero length (decode and
 * decode_per_seq 0, nothing to prefill) advances every running sequence
 * up to the next one that finishes at once, so it never loops token by
 * token. Work per step: one pass over the running sequences, plus the
 * admitted ones.
 *
 * A response with max_tokens 0 is answered at once in both modes and never
 * enters the engine. An embeddings or rankings request (stream.pool) is a
 * sequence of one step: its prefill, after which its answer is due; that
 * step generates no token (not counted in the generation total nor the KV
 * cache).
 */
#include <math.h>
#include <string.h>

#include "mock.h"

/* Tokens of n that count as generated: none for an embeddings or rankings
 * request, whose one step is its prefill. */
static uint32_t generated(const struct stream *s, uint32_t n)
{
	return s->pool ? 0 : n;
}

static void wake(struct model *m, struct stream *s, int64_t at)
{
	s->next_ns = at;
	if (m->wake)
		m->wake(m->wake_ctx, s);
}

/* Every change of `running` goes through these, so that the telemetry
 * can integrate over time at the load that held until now. */
static void running_inc(struct model *m)
{
	if (m->load_changed)
		m->load_changed(m->wake_ctx);
	m->running++;
}

static void running_dec(struct model *m)
{
	if (m->load_changed)
		m->load_changed(m->wake_ctx);
	m->running--;
}

/* ---- intrusive doubly linked lists ---- */

static void list_push(struct stream **head, struct stream **tail, struct stream *s)
{
	s->enext = NULL;
	s->eprev = *tail;
	if (*tail)
		(*tail)->enext = s;
	else
		*head = s;
	*tail = s;
}

static void list_del(struct stream **head, struct stream **tail, struct stream *s)
{
	if (s->eprev)
		s->eprev->enext = s->enext;
	else
		*head = s->enext;
	if (s->enext)
		s->enext->eprev = s->eprev;
	else
		*tail = s->eprev;
	s->eprev = s->enext = NULL;
}

void model_init(struct model *m, const struct mock_config *cfg,
                void (*wakefn)(void *ctx, struct stream *s), void *wake_ctx)
{
	memset(m, 0, sizeof(*m));
	m->load = cfg->load;
	m->ttft_ns = cfg->ttft_ns;
	m->itl_ns = cfg->itl_ns;
	m->max_batch = cfg->max_batch ? cfg->max_batch : UINT32_MAX;
	m->prefill_ns_per_token = cfg->prefill_ns_per_token;
	m->decode_ns = cfg->decode_ns;
	m->decode_ns_per_seq = cfg->decode_ns_per_seq;
	m->tokens_per_chunk = cfg->tokens_per_chunk ? cfg->tokens_per_chunk : 1;
	m->wake = wakefn;
	m->wake_ctx = wake_ctx;
}

/* ---- the engine ---- */

/* Tokens s must have for its next chunk. */
static uint32_t chunk_target(const struct model *m, const struct stream *s)
{
	uint32_t left = s->max_tokens - s->sent;
	return s->sent + (left < m->tokens_per_chunk ? left : m->tokens_per_chunk);
}

static double prefill_ns(const struct model *m, const struct stream *s)
{
	return (double)m->ttft_ns + m->prefill_ns_per_token * (double)s->prompt_tokens;
}

/* Move the oldest waiting sequence into a batch slot; returns its prefill time. */
static double admit(struct model *m)
{
	struct stream *s = m->wait_head;
	list_del(&m->wait_head, &m->wait_tail, s);
	m->waiting--;
	list_push(&m->run_head, &m->run_tail, s);
	running_inc(m);
	s->phase = SEQ_RUNNING;
	m->prompt_tokens_total += s->prompt_tokens;
	m->kv_tokens += s->prompt_tokens;
	return prefill_ns(m, s);
}

/* Longest step: about three years, far below int64 overflow (the flags
 * allow an hour per sequence and per 1k prompt tokens, times many). */
#define STEP_MAX_NS 1e17

static void set_step_end(struct model *m)
{
	double len = m->step_len < STEP_MAX_NS ? m->step_len : STEP_MAX_NS;
	m->step_end = m->step_start + (int64_t)llround(len);
}

/* Form the step that starts at t, or go idle. */
static void step_begin(struct model *m, int64_t t)
{
	double prefill = 0;
	while (m->wait_head && m->running < m->max_batch)
		prefill += admit(m);
	if (!m->running) {
		m->busy = false;
		return;
	}
	m->busy = true;
	m->step_start = t;
	m->step_len = m->decode_ns + m->decode_ns_per_seq * (double)m->running + prefill;
	set_step_end(m);
}

/* The step in progress ends: every running sequence gets `adv` tokens
 * (1, or more for a step of zero length), finished ones free their slots,
 * and the next step starts. */
static void step_finish(struct model *m)
{
	int64_t t = m->step_end;
	uint32_t adv = 1;
	if (t == m->step_start) {
		/* Zero length: steps up to the next finish are all instant and
		 * admit nothing, so take them at once. */
		adv = UINT32_MAX;
		for (struct stream *s = m->run_head; s; s = s->enext)
			if (s->max_tokens - s->produced < adv)
				adv = s->max_tokens - s->produced;
	}
	struct stream *next;
	for (struct stream *s = m->run_head; s; s = next) {
		next = s->enext;
		s->produced += adv;
		m->generation_tokens_total += generated(s, adv);
		m->kv_tokens += generated(s, adv);
		if (s->next_ns == MOCK_NEVER && s->produced >= chunk_target(m, s))
			wake(m, s, t);
		if (s->produced >= s->max_tokens) {
			list_del(&m->run_head, &m->run_tail, s);
			running_dec(m);
			m->kv_tokens -= (uint64_t)s->prompt_tokens + generated(s, s->produced);
			s->phase = SEQ_DONE;
		}
	}
	m->steps++;
	step_begin(m, t);
}

void model_advance(struct model *m, int64_t now)
{
	while (m->busy && m->step_end <= now)
		step_finish(m);
}

int64_t model_deadline(const struct model *m)
{
	return m->busy ? m->step_end : 0;
}

/* ---- streams ---- */

void model_stream_start(struct model *m, struct stream *s, int64_t now)
{
	m->active++;
	m->active_prompt += s->prompt_tokens;
	s->start_ns = now;
	s->chunks = 0;
	s->produced = 0;
	s->phase = SEQ_NONE;
	if (!m->load || s->max_tokens == 0) {
		running_inc(m);
		m->prompt_tokens_total += s->prompt_tokens;
		m->kv_tokens += s->prompt_tokens;
		s->next_ns = now + (m->load ? 0 : m->ttft_ns);
		return;
	}
	model_advance(m, now);
	s->next_ns = MOCK_NEVER;
	s->phase = SEQ_WAITING;
	list_push(&m->wait_head, &m->wait_tail, s);
	m->waiting++;
	if (!m->busy) {
		step_begin(m, now);
	} else if (m->step_start == now && m->running < m->max_batch && m->wait_head == s) {
		/* The step began at this very instant: join it. */
		m->step_len += m->decode_ns_per_seq + admit(m);
		set_step_end(m);
	}
	model_advance(m, now); /* a step of zero length ends at once */
}

int64_t model_next_ns(struct model *m, struct stream *s, uint32_t n)
{
	if (s->phase == SEQ_NONE) {
		m->generation_tokens_total += generated(s, n);
		m->kv_tokens += generated(s, n);
		return s->next_ns + m->itl_ns;
	}
	/* The engine counted these tokens when it generated them. The next
	 * chunk is due now if the engine is ahead of the stream, else when
	 * the step that completes it ends. */
	if (s->sent >= s->max_tokens || s->produced >= chunk_target(m, s))
		return s->next_ns;
	return MOCK_NEVER;
}

void model_stream_end(struct model *m, struct stream *s)
{
	m->active--;
	m->active_prompt -= s->prompt_tokens;
	switch ((enum seq_phase)s->phase) {
	case SEQ_NONE:
		running_dec(m);
		m->kv_tokens -= (uint64_t)s->prompt_tokens + generated(s, s->sent);
		break;
	case SEQ_WAITING:
		list_del(&m->wait_head, &m->wait_tail, s);
		m->waiting--;
		break;
	case SEQ_RUNNING:
		/* Gone mid-generation (the client left): the slot is free for
		 * the next step; the one in progress keeps its length. */
		list_del(&m->run_head, &m->run_tail, s);
		running_dec(m);
		m->kv_tokens -= (uint64_t)s->prompt_tokens + generated(s, s->produced);
		break;
	case SEQ_DONE:
		break;
	}
	s->phase = SEQ_NONE;
}
