/* show.h - the readable summary of one run (`headroom show`, and the end
 * of `headroom submit --wait`), in the spirit of AIPerf's console table.
 */
#ifndef HR_CLI_SHOW_H
#define HR_CLI_SHOW_H

#include <jansson.h>
#include <stdio.h>

/* Writes run (a GET /api/v1/runs/{id} answer, borrowed, untrusted: any
 * member may be missing or of the wrong type) to out: a header (id, name,
 * state, reason, times, target, load, progress), then the metrics table,
 * counts and errors by category, or a note that there is no summary yet. */
void show_run(FILE *out, json_t *run);
/* The per-class table and interference lines of a run with traffic
 * classes (cli/classes.c); nothing for other runs. */
void show_classes(FILE *out, json_t *run);

/* Display name of a metric tag: the fixed name of a known tag, else the
 * tag with '_' as spaces and each word capitalised. Caller frees. */
char *show_metric_name(const char *tag);

/* The run's labels, note, pin and repeat group, one line each, as `show`
 * prints them under the header; each only when set. */
void show_labels(FILE *out, json_t *run);

/* A metric's unit in summary.metrics (borrowed), or NULL. */
const char *show_unit(json_t *summary, const char *metric);

/* A result of summary.gates.results (or a gate of a spec): its condition,
 * "metric.stat op value" ("error_rate < 0.01" for a run-level figure; a
 * regression gate: "metric.stat at most 5% worse than the baseline"), into
 * buf (n bytes). Returns buf. */
const char *show_gate_condition(char *buf, size_t n, json_t *g);

/* Its name: the gate's own, else its condition. Returns buf. */
const char *show_gate_name(char *buf, size_t n, json_t *g);

/* Its actual figure with the metric's unit (summary: the run's), and for a
 * regression gate the change in % against the baseline. Returns buf. */
const char *show_gate_actual(char *buf, size_t n, json_t *g, json_t *summary);

/* Its regression details: "baseline main (runs 10,11): 20.50 -> 22.60 ms,
 * +10.20% (CI +8.80% .. +11.70%), worse"; "" for a threshold gate. */
const char *show_gate_baseline(char *buf, size_t n, json_t *g, json_t *summary);

/* A signed percentage, "+10.20%" (buf: VIEW_NUMLEN + 2 bytes). */
const char *show_pct(char *buf, double v);

#endif
