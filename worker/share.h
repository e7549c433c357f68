/* share.h - the worker's part of a run, read from a SCHEDULE message.
 *
 * The message is hostile input: the spec in it is validated exactly as the
 * API validates it (spec_from_json), and every share field is checked for
 * type and range. Unknown share fields are ignored (later protocol
 * versions add some); missing optional ones take their defaults.
 */
#ifndef HR_WORKER_SHARE_H
#define HR_WORKER_SHARE_H

#include <jansson.h>
#include <stdint.h>

#include "spec.h"

struct share {
	int slots;              /* concurrent requests, >= 1 (required) */
	int64_t requests;       /* requests to send; 0 with duration_s > 0 */
	double duration_s;      /* > 0: duration-bounded run */
	uint64_t req_id_base;   /* the k-th request is req_id_base + k * req_id_stride */
	uint64_t req_id_stride; /* >= 1 */
};

/* Reads msg (borrowed; the SCHEDULE payload) for the worker `index`. On
 * success returns 0 and fills spec (release with spec_release) and sh; on
 * failure returns -1 with a message in err (HR_ERRLEN) and spec untouched. */
int share_parse(json_t *msg, int index, struct spec *spec, struct share *sh, char *err);

#endif
