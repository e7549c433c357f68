/* calibrate.h - this host's client ceiling (docs/client.md).
 *
 * A calibration is a set of ordinary runs, one per output length, each
 * with one worker in concurrency mode against a zero-delay headroom-mock
 * that the daemon starts for the run (spec target.mock). When the last of
 * them ends, the calibration's result holds, per output length, the
 * requests/s and streamed tokens/s one worker sustained, and whether the
 * worker was the limit (its loop busy) or the mock was. The newest
 * successful calibration is the host's client profile: every later
 * summary reports its load as a fraction of it (verdict.h).
 */
#ifndef HR_SERVER_CALIBRATE_H
#define HR_SERVER_CALIBRATE_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

/* Validates a request body (borrowed) and queues the calibration's runs.
 * Returns 0 and *id; -400 with field and msg (256 bytes each) for a bad
 * body; -1 with msg on a store error. */
int calib_create(struct store *s, json_t *body, int64_t *id, char *field, char *msg);
/* One calibration (new reference) or NULL (unknown id, or error). */
json_t *calib_get(struct store *s, int64_t id);
/* The newest first, at most limit. */
json_t *calib_list(struct store *s, int limit);
/* The newest succeeded calibration, or NULL. */
json_t *calib_latest(struct store *s);
/* A run ended: when it belongs to a calibration whose runs are all over,
 * computes and stores the calibration's result. spec: the run's spec. */
void calib_run_finished(struct store *s, int64_t run_id, json_t *spec);
/* Settles every calibration left running (at start-up, after the runs of a
 * previous daemon were marked interrupted). */
void calib_settle_all(struct store *s);

#endif
