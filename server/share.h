/* share.h - the SCHEDULE message a worker gets (api/protocol.md,
 * "SCHEDULE payload"): its share of the run's work, a pure function of the
 * run's spec, the datasets it loads and the targets allowed, so that it
 * can be tested alone (tests/unit/test_share.c). The split itself is
 * lib/split.c's, the one the workers use too. */
#ifndef HR_SHARE_H
#define HR_SHARE_H

#include <jansson.h>
#include <stdint.h>

#include "datasets.h"
#include "hrlimits.h"
#include "netallow.h"
#include "spec.h"

/* Request indices: the warm-up's start here, unlike any of the run's
 * prompts; traffic class k's start at k times CLASS_REQ_OFFSET. */
#define WARMUP_REQ_OFFSET (1LL << 40)
#define CLASS_REQ_OFFSET (1LL << 43)

/* What the shares are made of (all borrowed). */
struct share_in {
	int64_t run_id;
	const struct spec *spec; /* the run's, classes included */
	int workers;             /* the run's, in all */
	/* the dataset each class loads (ds[0] without classes), NULL: none */
	const struct dataset_ref *ds[HR_MAX_CLASSES];
	const struct netallow *net; /* share.net */
};

/* The SCHEDULE message for worker gi (0 <= gi < in->workers); with
 * classes, gi is worker i of its class's pool, and its share that pool's.
 * A new reference. */
json_t *share_schedule(const struct share_in *in, int gi);

#endif
