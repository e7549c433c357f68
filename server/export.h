/* export.h - per-request records as JSONL or CSV rows.
 *
 * One row per request with the stored fields and every per-request metric
 * of lib/metrics.h under its AIPerf tag (ms for latencies). Numbers are
 * written in their shortest exact form, so re-computing a percentile from
 * an export gives the stored summary bit for bit.
 */
#ifndef HR_EXPORT_H
#define HR_EXPORT_H

#include <jansson.h>
#include <stdint.h>

#include "dynbuf.h"
#include "hrlimits.h"
#include "record.h"

enum export_format { EXPORT_JSONL, EXPORT_CSV };

/* Appends s as one CSV cell, quoted (RFC 4180) when it holds a comma,
 * quote or line break. */
void export_csv_cell(struct dynbuf *out, const char *s);

/* The CSV header line (with newline); with_class: a `class` column after
 * `worker` (runs with traffic classes). */
void export_csv_header(struct dynbuf *out);
void export_csv_header_ex(struct dynbuf *out, int with_class);
/* Appends one record as a line (with newline). Returns 0 or -1 when out is full. */
int export_record(struct dynbuf *out, enum export_format fmt, const struct hr_record *r);
/* The same, naming the record's traffic class (cls, or NULL for none). */
int export_record_ex(struct dynbuf *out, enum export_format fmt, const struct hr_record *r,
		     const char *cls);

/* A run's traffic classes by worker, from its normalised spec (spec.classes:
 * consecutive pools of `workers` each). n is 0 for a run without classes. */
struct export_classes {
	int n;
	struct export_class {
		char name[HR_MAX_CLASS_NAME + 1];
		uint32_t first, count;
	} c[HR_MAX_CLASSES];
};
void export_classes_of(json_t *spec, struct export_classes *out);
/* The class of worker's records, or NULL. */
const char *export_class_name(const struct export_classes *c, uint32_t worker);

#endif
