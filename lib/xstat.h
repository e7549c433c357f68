/* xstat.h - exact summary statistics of samples too large to hold in
 * memory, computed over repeated passes over the same values.
 *
 * A summary reads every record of a run and keeps one sample per metric
 * (and one for every inter-chunk gap: 10,000,000 requests of 256 tokens
 * are 2.5 billion values). The samples of one summary share a pool with a
 * budget of values. While they fit, each sample keeps its values and the
 * results come from lib/stats.c and lib/infer.c as before. Once they do
 * not, every sample of the pool switches to passes: the caller feeds the
 * same values in the same order again, pass after pass, until no sample
 * asks for another:
 *
 *   pass 1  count, the numpy-ordered sum (blocks of pairwise sums), the
 *           compensated sum, and a count of the keys' top 16 bits;
 *   pass 2  the sums of squared deviations from the mean (numpy's and the
 *           corrected two-pass ones); for each group of keys holding a
 *           wanted rank (min, max, the neighbours of each percentile, the
 *           bounds of each percentile's interval): its values, if there are
 *           few enough, else a count of its next 12 bits;
 *   pass 3+ the same for the narrower groups, until every wanted rank is
 *           known (at most 1 + 5 passes; a group whose keys are all equal is
 *           known at once).
 *
 * Every result is bit for bit what stats_compute_select, infer_moments_of,
 * infer_t_mean and infer_pct_ci give on the whole sample: the sums are
 * taken in the same order with the same blocking, and within a group the
 * values keep their original order before a stable sort. Memory in passes:
 * ~0.6 MiB per sample in pass 1, then at most XSTAT_MAX_RANKS groups of
 * 32 KiB counts or of collected values, the latter bounded by the pool
 * budget divided among its samples.
 *
 * Values must not be NaN (the callers drop them); -0.0 is taken as +0.0.
 */
#ifndef HR_XSTAT_H
#define HR_XSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "infer.h"
#include "stats.h"

#define XSTAT_MAX_RANKS (2 + 4 * STATS_NPCT)

struct xstat_pool {
	size_t budget;      /* values the samples may hold together */
	size_t held;        /* values they hold now (memory mode) */
	int passes;         /* 1 once they switched to passes */
	int nstats;         /* samples registered (xstat_init) */
	size_t collect_min; /* lower bound of a group collected whole (tests lower it) */
};

/* budget: values (8 bytes each) the pool's samples may keep in memory
 * together before they switch to passes; 0 starts in passes at once. */
void xstat_pool_init(struct xstat_pool *p, size_t budget);

struct xs_group;

struct xstat {
	struct xstat_pool *pool;
	int passes; /* 0: values in mem; else the pass now being fed, 1.. */
	struct dvec mem;
	/* pass 1 */
	size_t n;
	double *blk; /* a block of STATS_NP_BUFSIZE values for the numpy sums */
	size_t nblk;
	double np_sum, np_sq, np_mean;
	struct infer_csum cs, cs1, cs2;
	double mean; /* infer's: compensated sum / n */
	uint64_t *hist0;
	/* the wanted ranks, ascending and distinct, and their values */
	size_t rank[XSTAT_MAX_RANKS], nrank;
	double got[XSTAT_MAX_RANKS];
	/* the groups fed in this pass, ordered by key */
	struct xs_group *grp;
	size_t ngrp;
};

struct xstat_result {
	struct stats st;
	struct infer_ci mean_ci;         /* ok = 0 when none */
	struct infer_ci pct_ci[STATS_NPCT];
};

void xstat_init(struct xstat *x, struct xstat_pool *p);
void xstat_release(struct xstat *x);
/* Feeds one value (not NaN). In passes, the same values in the same order
 * every pass. */
void xstat_add(struct xstat *x, double v);
/* Ends a pass; 1 when this sample needs another pass over the values. */
int xstat_end_pass(struct xstat *x);
/* The results once xstat_end_pass said 0; conf for the intervals. */
void xstat_result(struct xstat *x, double conf, struct xstat_result *out);

#endif
