/* xstat.c - exact summary statistics over repeated passes (see xstat.h). */
#include "xstat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define XS_BITS0 16 /* digits of the first count */
#define XS_BITS 12  /* digits of each later one */
#define XS_COLLECT_MIN 4096

/* A group of keys sharing their top `bits` bits: the values below it, how
 * many it holds, and what this pass does with them. */
struct xs_group {
	uint64_t lo, hi; /* its keys: lo..hi */
	int bits;
	size_t base, count;
	int collect; /* 1: gather the values; 0: count the next digit */
	struct dvec vals;
	uint64_t *hist;
	uint64_t kmin, kmax;
};

void xstat_pool_init(struct xstat_pool *p, size_t budget)
{
	memset(p, 0, sizeof *p);
	p->budget = budget;
	p->passes = budget == 0;
	p->collect_min = XS_COLLECT_MIN;
}

void xstat_init(struct xstat *x, struct xstat_pool *p)
{
	memset(x, 0, sizeof *x);
	x->pool = p;
	p->nstats++;
	dvec_init(&x->mem);
}

static void groups_free(struct xstat *x)
{
	for (size_t i = 0; i < x->ngrp; i++) {
		dvec_release(&x->grp[i].vals);
		free(x->grp[i].hist);
	}
	free(x->grp);
	x->grp = NULL;
	x->ngrp = 0;
}

void xstat_release(struct xstat *x)
{
	if (x->pool && !x->passes)
		x->pool->held -= x->mem.n;
	dvec_release(&x->mem);
	free(x->blk);
	free(x->hist0);
	groups_free(x);
	x->blk = NULL;
	x->hist0 = NULL;
}

/* --- pass 1 and 2: the sums ------------------------------------------------- */

static void block_flush(struct xstat *x, int sq)
{
	if (!x->nblk)
		return;
	double s = stats_pairwise_sum(x->blk, x->nblk, sq, x->np_mean);
	if (sq)
		x->np_sq += s;
	else
		x->np_sum += s;
	x->nblk = 0;
}

static void pass1_add(struct xstat *x, double v)
{
	x->n++;
	x->blk[x->nblk++] = v;
	if (x->nblk == STATS_NP_BUFSIZE)
		block_flush(x, 0);
	infer_csum_add(&x->cs, v);
	x->hist0[stats_sort_key(v) >> (64 - XS_BITS0)]++;
}

static void start_passes(struct xstat *x)
{
	x->passes = 1;
	x->blk = xmalloc(STATS_NP_BUFSIZE * sizeof *x->blk);
	x->hist0 = xcalloc((size_t)1 << XS_BITS0, sizeof *x->hist0);
	struct dvec m = x->mem;
	x->pool->held -= m.n;
	dvec_init(&x->mem);
	for (size_t i = 0; i < m.n; i++) /* the values so far, in their order */
		pass1_add(x, m.v[i]);
	dvec_release(&m);
}

/* --- groups ------------------------------------------------------------------ */

/* The group holding key k (groups are disjoint and ordered), or NULL. */
static struct xs_group *group_of(struct xstat *x, uint64_t k)
{
	size_t lo = 0, hi = x->ngrp;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k < x->grp[mid].lo)
			hi = mid;
		else if (k > x->grp[mid].hi)
			lo = mid + 1;
		else
			return &x->grp[mid];
	}
	return NULL;
}

static size_t collect_max(const struct xstat *x)
{
	const struct xstat_pool *p = x->pool;
	size_t share = p->budget / ((size_t)(p->nstats > 0 ? p->nstats : 1) * XSTAT_MAX_RANKS);
	return share > p->collect_min ? share : p->collect_min;
}

/* Rank r's value is known: every rank r in [base, base + count) of a group
 * whose keys are all k. */
static void resolve_equal(struct xstat *x, size_t base, size_t count, uint64_t k)
{
	for (size_t i = 0; i < x->nrank; i++)
		if (x->rank[i] >= base && x->rank[i] < base + count)
			x->got[i] = stats_key_value(k);
}

static int has_rank(const struct xstat *x, size_t base, size_t count)
{
	for (size_t i = 0; i < x->nrank; i++)
		if (x->rank[i] >= base && x->rank[i] < base + count)
			return 1;
	return 0;
}

/* Splits counts[0..ndig) of the keys lo.. (each digit `width` keys wide,
 * `bits` bits of prefix after the split) into the next pass's groups: a
 * digit holding a wanted rank becomes a group, known at once when it is
 * one key wide. */
static void split(struct xstat *x, struct xs_group *out, size_t *nout, const uint64_t *counts,
		  size_t ndig, uint64_t lo, int bits, size_t base)
{
	uint64_t width = bits >= 64 ? 1 : (uint64_t)1 << (64 - bits);
	size_t below = base;
	for (size_t d = 0; d < ndig; d++) {
		size_t c = (size_t)counts[d];
		if (!c || !has_rank(x, below, c)) {
			below += c;
			continue;
		}
		uint64_t glo = lo + (uint64_t)d * width;
		if (width == 1) {
			resolve_equal(x, below, c, glo);
		} else {
			struct xs_group *g = &out[(*nout)++];
			memset(g, 0, sizeof *g);
			g->lo = glo;
			g->hi = glo + (width - 1);
			g->bits = bits;
			g->base = below;
			g->count = c;
			g->collect = c <= collect_max(x);
			dvec_init(&g->vals);
			g->kmin = UINT64_MAX;
			if (!g->collect)
				g->hist = xcalloc((size_t)1 << XS_BITS, sizeof *g->hist);
		}
		below += c;
	}
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/* After pass 1: the mean, the wanted ranks and the first groups. */
static void end_pass1(struct xstat *x, double conf)
{
	block_flush(x, 0);
	size_t n = x->n;
	if (n == 0)
		return;
	x->np_mean = x->np_sum / (double)n;
	x->mean = infer_csum_total(&x->cs) / (double)n;
	size_t r[XSTAT_MAX_RANKS], nr = 0;
	r[nr++] = 0;
	r[nr++] = n - 1;
	for (int i = 0; i < STATS_NPCT; i++) {
		size_t lo, hi, l, u;
		double g;
		stats_pct_pos(n, stats_pcts[i], &lo, &hi, &g);
		r[nr++] = lo;
		r[nr++] = hi;
		if (infer_pct_ci_ranks(n, stats_pcts[i], conf, &l, &u) == 0) {
			r[nr++] = l;
			r[nr++] = u;
		}
	}
	qsort(r, nr, sizeof r[0], cmp_size);
	x->nrank = 0;
	for (size_t i = 0; i < nr; i++)
		if (x->nrank == 0 || x->rank[x->nrank - 1] != r[i])
			x->rank[x->nrank++] = r[i];
	for (size_t i = 0; i < x->nrank; i++)
		x->got[i] = NAN;
	x->grp = xcalloc(XSTAT_MAX_RANKS, sizeof *x->grp);
	x->ngrp = 0;
	split(x, x->grp, &x->ngrp, x->hist0, (size_t)1 << XS_BITS0, 0, XS_BITS0, 0);
	free(x->hist0);
	x->hist0 = NULL;
}

/* After a later pass: resolve collected groups and groups of one key,
 * split the others by the digit just counted. */
static void end_group_pass(struct xstat *x)
{
	struct xs_group *next = xcalloc(XSTAT_MAX_RANKS, sizeof *next);
	size_t nn = 0;
	for (size_t i = 0; i < x->ngrp; i++) {
		struct xs_group *g = &x->grp[i];
		if (g->collect) {
			stats_sort(g->vals.v, g->vals.n); /* stable: original order within ties */
			for (size_t k = 0; k < x->nrank; k++)
				if (x->rank[k] >= g->base && x->rank[k] < g->base + g->vals.n)
					x->got[k] = g->vals.v[x->rank[k] - g->base];
		} else if (g->kmin == g->kmax) {
			resolve_equal(x, g->base, g->count, g->kmin);
		} else {
			split(x, next, &nn, g->hist, (size_t)1 << XS_BITS, g->lo, g->bits + XS_BITS,
			      g->base);
		}
	}
	groups_free(x);
	x->grp = next;
	x->ngrp = nn;
}

/* --- the interface ------------------------------------------------------------ */

void xstat_add(struct xstat *x, double v)
{
	v += 0.0; /* -0.0 as +0.0: the sorts do not tell them apart, and the passes cannot */
	if (!x->passes) {
		if (x->pool->passes) {
			start_passes(x);
		} else {
			dvec_push(&x->mem, v);
			if (++x->pool->held > x->pool->budget)
				x->pool->passes = 1;
			return;
		}
	}
	if (x->passes == 1) {
		pass1_add(x, v);
		return;
	}
	if (x->passes == 2) { /* the squared deviations, in the same order */
		x->blk[x->nblk++] = v;
		if (x->nblk == STATS_NP_BUFSIZE)
			block_flush(x, 1);
		double d = v - x->mean;
		infer_csum_add(&x->cs1, d);
		infer_csum_add(&x->cs2, d * d);
	}
	if (!x->ngrp)
		return;
	uint64_t k = stats_sort_key(v);
	struct xs_group *g = group_of(x, k);
	if (!g)
		return;
	if (g->collect) {
		dvec_push(&g->vals, v);
		return;
	}
	g->hist[(k >> (64 - g->bits - XS_BITS)) & (((uint64_t)1 << XS_BITS) - 1)]++;
	if (k < g->kmin)
		g->kmin = k;
	if (k > g->kmax)
		g->kmax = k;
}

/* The confidence the ranks are chosen for: the summary's. Intervals at
 * another level would need other ranks, so the result insists on it. */
#define XS_CONF 0.95

int xstat_end_pass(struct xstat *x)
{
	if (!x->passes && x->pool->passes)
		start_passes(x);
	if (!x->passes)
		return 0;
	if (x->passes == 1) {
		end_pass1(x, XS_CONF);
		if (x->n == 0)
			return 0;
		x->passes = 2;
		return 1; /* the squared deviations need pass 2 */
	}
	if (x->passes == 2)
		block_flush(x, 1);
	end_group_pass(x);
	x->passes++;
	return x->ngrp > 0;
}

static size_t rank_at(const struct xstat *x, size_t r)
{
	size_t i = 0;
	while (i + 1 < x->nrank && x->rank[i] != r)
		i++;
	return i;
}

void xstat_result(struct xstat *x, double conf, struct xstat_result *out)
{
	struct infer_moments m;
	memset(out, 0, sizeof *out);
	out->mean_ci.ok = 0;
	for (int i = 0; i < STATS_NPCT; i++)
		out->pct_ci[i].ok = 0;
	if (!x->passes) {
		double *v = x->mem.v;
		size_t n = x->mem.n;
		stats_compute_select(v, n, &out->st);
		if (n < 2)
			return;
		stats_sort(v, n);
		infer_moments_of(v, n, &m);
		infer_t_mean(&m, conf, &out->mean_ci);
		for (int i = 0; i < STATS_NPCT; i++)
			infer_pct_ci(v, n, stats_pcts[i], conf, &out->pct_ci[i]);
		return;
	}
	size_t n = x->n;
	struct stats *st = &out->st;
	st->count = n;
	if (n == 0) {
		st->avg = st->min = st->max = st->std = NAN;
		for (int i = 0; i < STATS_NPCT; i++)
			st->p[i] = NAN;
		return;
	}
	st->avg = x->np_mean;
	st->std = sqrt(x->np_sq / (double)n);
	st->min = x->got[rank_at(x, 0)];
	st->max = x->got[rank_at(x, n - 1)];
	for (int i = 0; i < STATS_NPCT; i++) {
		size_t lo, hi;
		double g;
		stats_pct_pos(n, stats_pcts[i], &lo, &hi, &g);
		st->p[i] = stats_pct_lerp(x->got[rank_at(x, lo)], x->got[rank_at(x, hi)], g);
	}
	if (n < 2 || conf != XS_CONF)
		return;
	infer_moments_set(&m, n, x->mean, infer_csum_total(&x->cs1), infer_csum_total(&x->cs2));
	infer_t_mean(&m, conf, &out->mean_ci);
	for (int i = 0; i < STATS_NPCT; i++) {
		size_t l, u;
		struct infer_ci *c = &out->pct_ci[i];
		c->est = st->p[i];
		c->lo = c->hi = NAN;
		if (infer_pct_ci_ranks(n, stats_pcts[i], conf, &l, &u) == 0 &&
		    !isnan(st->p[i])) {
			c->lo = x->got[rank_at(x, l)];
			c->hi = x->got[rank_at(x, u)];
			c->ok = !isnan(c->lo) && !isnan(c->hi);
		}
	}
}
