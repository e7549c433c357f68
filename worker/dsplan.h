/* dsplan.h - a run's dataset in the worker: which entry (or conversation)
 * each request takes (docs/datasets.md, "Using a dataset in a run").
 *
 * The unit sampled is an entry for the single-request formats
 * (single_turn, random_pool, sharegpt) and a conversation for multi_turn;
 * request (or session) k of the run - its global index, the same on every
 * worker - takes unit:
 *   sequential  k mod n: the run walks the dataset in file order, again
 *               from the start when it runs out;
 *   random      uniform from (seed, k), with replacement;
 *   shuffle     perm[k mod n] for one seeded permutation of the units:
 *               every unit once before any repeats.
 * mooncake_trace datasets replay through the trace plan (load.h) instead,
 * and so do single_turn and random_pool datasets whose entries carry
 * timestamps (a fixed schedule) in load.mode "trace": request k then is
 * the k-th entry in timestamp order.
 */
#ifndef HR_WORKER_DSPLAN_H
#define HR_WORKER_DSPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"
#include "share.h"
#include "trace.h"

struct dsplan {
	struct dataset ds;
	int sampling;    /* SPEC_SAMPLE_* (never DEFAULT) */
	uint64_t seed;
	bool sessions;   /* multi_turn: units are conversations */
	size_t units;
	uint32_t *perm;  /* shuffle only */
	uint32_t *order; /* a fixed schedule replayed (dsplan_trace): trace index -> entry */
};

/* Loads the share's dataset. Returns 0, or -1 with err (the file is gone or
 * does not parse, or it has nothing to send). */
int dsplan_init(struct dsplan *p, const struct share *sh, uint64_t seed, char *err);
void dsplan_release(struct dsplan *p);
/* The unit of request (or session) k. */
uint32_t dsplan_unit(const struct dsplan *p, uint64_t k);
/* The trace of a mooncake_trace dataset, or of a single_turn / random_pool
 * one whose entries have timestamps (their lengths; the text comes from
 * the entry, see dsplan_timed_entry), for trace_plan_build_from: a new
 * struct trace (trace_release) holding copies, in timestamp order. */
void dsplan_trace(struct dsplan *p, struct trace *out);

/* The entry of request (trace index) k of a replayed fixed schedule. */
uint32_t dsplan_timed_entry(const struct dsplan *p, uint64_t k);

#endif
