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

/* Display name of a metric tag: the fixed name of a known tag, else the
 * tag with '_' as spaces and each word capitalised. Caller frees. */
char *show_metric_name(const char *tag);

#endif
