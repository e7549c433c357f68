/* history.h - the run history beyond one run (docs/compare.md): spec
 * fingerprints, label selectors and filtered, sorted, keyset-paged lists,
 * label and note edits, deletion and retention, repeat groups, named
 * baselines, each run's headline figures as rows, and metric series.
 *
 * Writes go through the store's writer thread, reads borrow a reader
 * (store.h). JSON results are new references the caller owns. Errors: 0
 * success, -1 with err, -404 unknown, -409 conflict (err says why).
 */
#ifndef HR_HISTORY_H
#define HR_HISTORY_H

#include <jansson.h>
#include <stdint.h>

#include "apiparse.h"
#include "hrlimits.h"
#include "store.h"

#define HISTORY_FP_LEN 16      /* hex characters of a fingerprint */
#define HISTORY_MAX_SELECTORS 16

/* The spec fingerprint: the first 16 hex digits of the SHA-256 of the
 * normalised spec without name, labels, repeat, validity and gates, its
 * keys sorted (the same workload, load and target give the same value).
 * out: HISTORY_FP_LEN + 1 bytes. */
void history_fingerprint(json_t *spec, char *out);

/* Registers hr_fingerprint(spec_text) on the writer connection (for the
 * migration that fills existing runs, schema/008). 0 or -1. */
int history_sql_functions(sqlite3 *db);

/* Inside a writer job: the id of the next run (never one given before,
 * schema/008's run_id_hwm), or -1 with err. */
int64_t history_tx_next_run_id(struct store_tx *tx, char *err);

/* Inside a writer job: indexes a run just inserted (its fingerprint and
 * its labels as rows). */
int history_tx_index_run(struct store_tx *tx, int64_t id, json_t *spec, char *err);

/* A filtered run list (GET /runs, GET /series). Strings are borrowed. */
struct run_query {
	int limit;
	int64_t before;           /* id keyset (sort by -id only), 0: none */
	const char *state, *name; /* NULL: any */
	int64_t since_ms, until_ms; /* created_at bounds, -1: none */
	const char *fingerprint;
	int64_t group_id;
	struct label_sel sel[HISTORY_MAX_SELECTORS];
	int n_sel;
	/* sort: by id (default), name, or a metric's statistic */
	int sort_desc;
	int sort_by;              /* SORT_ID, SORT_NAME, SORT_METRIC, SORT_VERDICT, SORT_VALID */
	const char *sort_metric;  /* SORT_METRIC: a metric_catalog tag */
	int sort_stat;            /* SORT_METRIC: index into metric_stat_names */
	const char *cursor;       /* a previous answer's next_cursor, or NULL */
};

/* GET /runs: {"runs": [...], "next_before", "next_cursor"}. -400: a bad
 * cursor (err says why). */
int history_list(struct store *s, const struct run_query *q, json_t **out, char *err);

/* PATCH /runs/{id}: body {"labels": {k: v|null}, "note", "pinned"},
 * validated here (-400 with *field set). */
int history_patch(struct store *s, int64_t id, json_t *body, char *field, char *err);

/* DELETE /runs/{id}: records in batches, then the run. -409 when running
 * or a baseline names it. */
int history_delete(struct store *s, int64_t id, char *err);

/* Retention: removes finished, unpinned runs that no baseline names, older
 * than days (0: no age limit) or beyond the newest per_fp runs of their
 * fingerprint (0: no count limit). Returns how many, or -1. */
int history_retain(struct store *s, int days, int per_fp, char *err);

/* Who submits (runs.submitted_by; NULL or "": "local"), and that token's
 * own bound on its queued runs (0: none). queued is set by
 * history_create_runs when it counted them. */
struct submitter {
	const char *who;
	long long max_queued;
	long long queued;
};

/* Creates the queued runs of one submission: count runs (1: no group) of
 * spec (borrowed), submitted by by->who. ids: count entries. *group: the
 * new group or 0. Refuses with -429 (by->queued: the token's runs queued
 * already) when by->max_queued > 0 and the token's queued runs would then
 * number more, and with -503 (*queued: the runs queued already) when
 * max_queued > 0 and all queued runs would. Both are counted in the
 * transaction that inserts, so concurrent submissions cannot pass a bound
 * together. */
int history_create_runs(struct store *s, json_t *spec, int count, double cooldown_s,
			int max_queued, struct submitter *by, int *queued, int64_t *ids,
			int64_t *group, char *err);

/* After a run ends: its headline figures (run_metrics), client verdict,
 * validity and gate outcome, from its summary (borrowed, may be NULL). */
int history_index_summary(struct store *s, int64_t id, json_t *summary, char *err);

/* GET /groups/{id}: the group, its runs and the spread across repeats. */
int history_group(struct store *s, int64_t id, double conf, json_t **out, char *err);

/* Baselines. PUT: body {"run"} | {"group"} | {"rule"}; *created 1 when new. */
int history_baseline_put(struct store *s, const char *name, json_t *body, int *created,
			 char *field, char *err);
int history_baseline_get(struct store *s, const char *name, json_t **out, char *err);
int history_baseline_list(struct store *s, json_t **out, char *err);
int history_baseline_delete(struct store *s, const char *name, char *err);
/* The runs a baseline stands for now (a rule: the latest matching run
 * created before `before_id`, 0: any). ids: up to max. Returns the count,
 * -404 no such baseline, 0 when a rule matches nothing, -1 on error. */
int history_baseline_runs(struct store *s, const char *name, int64_t before_id, int64_t *ids,
			  int max, char *err);

/* The runs of a group, oldest first (up to max). Returns the count, -404, -1. */
int history_group_runs(struct store *s, int64_t group, int64_t *ids, int max, char *err);

/* GET /series: one metric statistic over the runs q selects (succeeded
 * runs only), oldest first, grouped by label group_by (NULL: one point per
 * run), with shifts marked by the lookback rule (docs/compare.md). */
struct series_opts {
	const char *metric;
	int stat;
	const char *group_by; /* a label key, or NULL */
	int lookback;
	double z, noise_pct, conf;
};
/* *out: the answer's JSON text (caller frees), *out_len its length. */
int history_series(struct store *s, const struct run_query *q, const struct series_opts *o,
		   char **out, size_t *out_len, char *err);

#endif
