/* share.h - the worker's part of a run, read from a SCHEDULE message
 * (api/protocol.md, "SCHEDULE payload").
 *
 * The message is hostile input: the spec in it is validated exactly as the
 * API validates it (spec_from_json), and every share field is checked for
 * type and range. Unknown share fields are ignored (later protocol
 * versions add some); missing optional ones take the defaults the
 * protocol documents.
 *
 * A share has one or two phases: the optional warm-up (`share.warmup`, a
 * phase share of its own) and the profiling phase (the share's top-level
 * phase fields). Run-wide settings (grace, cancellation, sessions, the
 * trace window) sit beside them.
 */
#ifndef HR_WORKER_SHARE_H
#define HR_WORKER_SHARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"
#include "hrlimits.h"
#include "netallow.h"
#include "spec.h"

/* One phase's load. */
struct share_phase {
	int mode;               /* SPEC_LOAD_CONCURRENCY / RATE / TRACE */
	int slots;              /* concurrency: slots (>= 1); rate/trace: ceiling, 0 = none */
	int64_t requests;       /* concurrency: this worker's count; trace: the replay's */
	double duration_s;      /* > 0: bounded by time */
	uint64_t req_id_base;   /* concurrency: the k-th request is base + k * stride */
	uint64_t req_id_stride; /* >= 1 */
	int total_slots;        /* concurrency: the run's concurrency (ramp) */
	double ramp_s;          /* concurrency: slots open over this */
	struct {                /* rate mode: the global arrival schedule */
		int law;        /* SCHED_* */
		double rate, smoothness, ramp_s;
		uint64_t stream;
		int64_t total_requests; /* 0: none */
		double duration_s;      /* 0: none */
		int batch_size;         /* load.batch: requests released together, 0 = none */
		double jitter_s;        /* ... spread over this after the batch's time */
	} rate;
};

struct share {
	struct share_phase prof;
	bool has_warmup;
	struct share_phase warm;
	/* this worker's index and the pool size: with traffic classes
	 * (SCHEDULE's `class`), its index in its class's pool and that pool's */
	int worker, workers;
	uint64_t req_offset; /* SCHEDULE class.req_offset: the class's request ids (0: none) */
	double grace_s;
	double cancel_fraction, cancel_after_s;
	bool sessions;
	struct spec_dist turns, think_s;
	double speedup, trace_start_s, trace_end_s; /* trace mode */
	/* workload.kind dataset: the stored file, read with dataset_load_file */
	bool has_dataset;
	char ds_path[HR_MAX_PATH_LEN];
	int ds_format;  /* enum ds_format */
	struct ds_options ds_opts;
	int ds_sampling; /* SPEC_SAMPLE_SEQUENTIAL / RANDOM / SHUFFLE */
	/* share.net: the operator's allow-list of targets and the daemon's own
	 * addresses (none: every address allowed) */
	struct netallow net;
};

/* Reads msg (borrowed; the SCHEDULE payload) for the worker `index`. On
 * success returns 0 and fills spec (release with spec_release) and sh; on
 * failure returns -1 with a message in err (HR_ERRLEN) and spec untouched. */
int share_parse(json_t *msg, int index, struct spec *spec, struct share *sh, char *err);

#endif
