/* model.c - the timing model of headroom-mock: when each step of each
 * response is due.
 *
 * Today it is the simplest server: every response runs on its own, the
 * first step comes TTFT after the request was taken and each next one ITL
 * after the previous one was due (an absolute schedule, so a late wake-up
 * does not push every later token back).
 *
 * A load model of continuous batching belongs here: it would keep the
 * running and waiting sequences (max batch, queueing), make prefill time
 * grow with the prompt (s->prompt_tokens, m->active_prompt) and decode time
 * grow with m->active, all inside model_next_ns(). The event loop asks
 * nothing else: it sleeps until the earliest next_ns of all responses.
 */
#include "mock.h"

void model_init(struct model *m, int64_t ttft_ns, int64_t itl_ns)
{
	m->ttft_ns = ttft_ns;
	m->itl_ns = itl_ns;
	m->active = 0;
	m->active_prompt = 0;
}

void model_stream_start(struct model *m, struct stream *s, int64_t now)
{
	m->active++;
	m->active_prompt += s->prompt_tokens;
	s->start_ns = now;
	s->chunks = 0;
	s->next_ns = now;
	s->next_ns = model_next_ns(m, s);
}

int64_t model_next_ns(const struct model *m, const struct stream *s)
{
	if (s->chunks == 0)
		return s->start_ns + m->ttft_ns;
	return s->next_ns + m->itl_ns;
}

void model_stream_end(struct model *m, struct stream *s)
{
	m->active--;
	m->active_prompt -= s->prompt_tokens;
}
