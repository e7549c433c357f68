/* load.c - fixed-concurrency slot bookkeeping (see load.h). */
#include "load.h"

#include <stdlib.h>

#include "util.h"

void load_init(struct load *l, int slots, int64_t requests, double duration_s)
{
	l->slots = slots < 1 ? 1 : slots;
	l->in_flight = 0;
	l->free_at = xcalloc((size_t)l->slots, sizeof *l->free_at);
	l->free_head = 0;
	l->free_n = l->slots; /* every slot free since t0 */
	l->started = 0;
	l->stopped = 0;
	if (duration_s > 0) {
		l->limit = -1;
		l->end_ns = (int64_t)(duration_s * 1e9);
	} else {
		l->limit = requests > 0 ? requests : 0;
		l->end_ns = INT64_MAX;
	}
}

void load_release(struct load *l)
{
	free(l->free_at);
	l->free_at = NULL;
}

static int exhausted(const struct load *l, int64_t now)
{
	return l->stopped || (l->limit >= 0 && l->started >= l->limit) || now >= l->end_ns;
}

int load_next(struct load *l, int64_t now, int64_t *intended_ns, int64_t *wake_ns)
{
	*wake_ns = -1;
	if (exhausted(l, now))
		return LOAD_EXHAUSTED;
	if (l->free_n == 0)
		return LOAD_WAIT;
	*intended_ns = l->free_at[l->free_head];
	l->free_head = (l->free_head + 1) % l->slots;
	l->free_n--;
	l->in_flight++;
	l->started++;
	return LOAD_SEND;
}

void load_done(struct load *l, int64_t now)
{
	if (l->in_flight <= 0)
		return;
	l->in_flight--;
	l->free_at[(l->free_head + l->free_n) % l->slots] = now;
	l->free_n++;
}

void load_stop(struct load *l)
{
	l->stopped = 1;
}

int load_finished(const struct load *l, int64_t now)
{
	return l->in_flight == 0 && exhausted(l, now);
}
