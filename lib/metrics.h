/* metrics.h - per-request metric definitions (docs/metrics.md, version 1).
 *
 * One table lists every per-request metric with its AIPerf tag, unit and
 * the function computing it from a record; the summary, the records
 * export and the CLI all iterate the same table, so a metric added here
 * appears everywhere. Inter-chunk latency is pooled (one value per gap)
 * and handled by metrics_chunk_gaps.
 */
#ifndef HR_METRICS_H
#define HR_METRICS_H

#include <stddef.h>

#include "record.h"

#define METRICS_VERSION 1

/* Which records a metric is computed over. */
enum metric_scope {
	METRIC_VALID = 0, /* valid profiling records (docs/metrics.md) */
	METRIC_SENT,      /* every profiling record that was sent, valid or not */
};

struct metric_def {
	const char *tag;  /* AIPerf's name, e.g. "time_to_first_token" */
	const char *unit; /* "ms", "tokens", "tokens/sec/user" */
	const char *label; /* human name for tables */
	/* The value for one record; NAN when it does not apply. */
	double (*fn)(const struct hr_record *r);
	int scope; /* enum metric_scope */
};

extern const struct metric_def metric_defs[];
extern const size_t metric_defs_count;

/* Every figure a comparison, a gate or a series can name: the per-request
 * metrics above (each a distribution), inter_chunk_latency (pooled gaps)
 * and the run-level figures (one number per run: throughputs, goodput,
 * error_rate). direction: which way is better. */
enum metric_direction { METRIC_LOWER_BETTER = -1, METRIC_NO_DIRECTION = 0, METRIC_HIGHER_BETTER = 1 };
struct metric_info {
	const char *tag, *unit;
	int direction;   /* enum metric_direction */
	int run_level;   /* 1: one number per run (its stat is "value") */
};
extern const struct metric_info metric_catalog[];
extern const size_t metric_catalog_count;
/* The catalog entry of tag, or NULL when no such figure exists. */
const struct metric_info *metric_info(const char *tag);
/* The statistics a distribution metric has, in summary order: "avg", "min",
 * "max", "std", then stats_pct_names. Returns the index of name in
 * metric_stat_names or -1; "value" (the figure of a run-level metric) is
 * index 0, the same column as "avg". */
#define METRIC_NSTATS 13
extern const char *const metric_stat_names[METRIC_NSTATS];
int metric_stat_index(const char *name);

/* A record is valid (counts in every latency and throughput metric) when
 * its status is 200, it has no error, and a streamed one carried at least
 * one content-bearing chunk. */
int record_is_valid(const struct hr_record *r);

/* Appends each gap between consecutive chunks (ms) via push(ctx, value). */
void metrics_chunk_gaps(const struct hr_record *r, void (*push)(void *ctx, double v), void *ctx);

/* ns -> ms exactly as every export and summary does it. */
static inline double ns_to_ms(long long ns)
{
	return (double)ns / 1e6;
}

#endif
