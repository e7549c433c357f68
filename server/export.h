/* export.h - per-request records as JSONL or CSV rows.
 *
 * One row per request with the stored fields and every per-request metric
 * of lib/metrics.h under its AIPerf tag (ms for latencies). Numbers are
 * written in their shortest exact form, so re-computing a percentile from
 * an export gives the stored summary bit for bit.
 */
#ifndef HR_EXPORT_H
#define HR_EXPORT_H

#include "dynbuf.h"
#include "record.h"

enum export_format { EXPORT_JSONL, EXPORT_CSV };

/* Appends s as one CSV cell, quoted (RFC 4180) when it holds a comma,
 * quote or line break. */
void export_csv_cell(struct dynbuf *out, const char *s);

/* The CSV header line (with newline). */
void export_csv_header(struct dynbuf *out);
/* Appends one record as a line (with newline). Returns 0 or -1 when out is full. */
int export_record(struct dynbuf *out, enum export_format fmt, const struct hr_record *r);

#endif
