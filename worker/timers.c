/* timers.c - indexed min-heap of deadlines (see timers.h). */
#include "timers.h"

#include <stdlib.h>

#include "util.h"

void tnode_init(struct tnode *t, int kind)
{
	t->at = 0;
	t->pos = -1;
	t->kind = kind;
}

void theap_init(struct theap *h)
{
	h->a = NULL;
	h->n = h->cap = 0;
}

void theap_release(struct theap *h)
{
	for (int i = 0; i < h->n; i++)
		h->a[i]->pos = -1;
	free(h->a);
	theap_init(h);
}

static void place(struct theap *h, int i, struct tnode *t)
{
	h->a[i] = t;
	t->pos = i;
}

static void up(struct theap *h, int i)
{
	struct tnode *t = h->a[i];
	while (i > 0) {
		int p = (i - 1) / 2;
		if (h->a[p]->at <= t->at)
			break;
		place(h, i, h->a[p]);
		i = p;
	}
	place(h, i, t);
}

static void down(struct theap *h, int i)
{
	struct tnode *t = h->a[i];
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1]->at < h->a[c]->at)
			c++;
		if (t->at <= h->a[c]->at)
			break;
		place(h, i, h->a[c]);
		i = c;
	}
	place(h, i, t);
}

void theap_set(struct theap *h, struct tnode *t, int64_t at)
{
	if (t->pos >= 0) {
		int64_t old = t->at;
		t->at = at;
		if (at < old)
			up(h, t->pos);
		else if (at > old)
			down(h, t->pos);
		return;
	}
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->a = xrealloc(h->a, (size_t)h->cap * sizeof *h->a);
	}
	t->at = at;
	place(h, h->n++, t);
	up(h, h->n - 1);
}

void theap_del(struct theap *h, struct tnode *t)
{
	int i = t->pos;
	if (i < 0)
		return;
	t->pos = -1;
	struct tnode *last = h->a[--h->n];
	if (i == h->n)
		return;
	place(h, i, last);
	if (i > 0 && h->a[(i - 1) / 2]->at > last->at)
		up(h, i);
	else
		down(h, i);
}

struct tnode *theap_pop_due(struct theap *h, int64_t now)
{
	if (!h->n || h->a[0]->at > now)
		return NULL;
	struct tnode *t = h->a[0];
	theap_del(h, t);
	return t;
}
