/* timers.h - an indexed binary min-heap of deadlines.
 *
 * Everything the worker must do at a precise moment that is not a socket
 * event lives here: the next arrival of a paced schedule, a concurrency
 * slot opening during a ramp, a session's next turn after its think time,
 * a request's cancellation deadline, the end of the grace period. The
 * runner arms one timerfd (TFD_TIMER_ABSTIME) for the earliest node, so
 * any number of deadlines costs one descriptor.
 *
 * A node is embedded in its owner (a request, a session...) and knows its
 * own position, so insert, update and removal are O(log n) and nothing is
 * allocated per deadline; the array only grows to the largest number of
 * nodes ever queued at once. Times are ns since t0.
 *
 * Thread affinity: the loop's thread.
 */
#ifndef HR_WORKER_TIMERS_H
#define HR_WORKER_TIMERS_H

#include <stddef.h>
#include <stdint.h>

struct tnode {
	int64_t at; /* deadline, ns since t0 */
	int pos;    /* index in the heap, -1 when not queued */
	int kind;   /* free for the owner: what to do when it fires */
};

struct theap {
	struct tnode **a;
	int n, cap;
};

void tnode_init(struct tnode *t, int kind);
static inline int tnode_queued(const struct tnode *t)
{
	return t->pos >= 0;
}

void theap_init(struct theap *h);
void theap_release(struct theap *h);
/* Queues t for at, or moves it there when already queued. */
void theap_set(struct theap *h, struct tnode *t, int64_t at);
/* Takes t out (no-op when not queued). */
void theap_del(struct theap *h, struct tnode *t);
/* The earliest node, or NULL. */
static inline struct tnode *theap_min(const struct theap *h)
{
	return h->n ? h->a[0] : NULL;
}
/* Removes and returns the earliest node when it is due at now, else NULL. */
struct tnode *theap_pop_due(struct theap *h, int64_t now);

#endif
