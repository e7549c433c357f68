/* imports.h - what the rest of the daemon reads of imported runs
 * (server/api_imports.c, schema/012): a run's origin, shown with it. */
#ifndef HR_IMPORTS_H
#define HR_IMPORTS_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/* Sets run's "import" member ({producer, version, format, sha256, bytes,
 * jsonl_sha256, jsonl_bytes, records, summary_only, start_times, stated,
 * unmapped, imported_at}) when run id was imported; leaves it alone
 * otherwise. db: a reader. */
void imports_attach(sqlite3 *db, int64_t id, json_t *run);

/* Whether a run object (runs_get) was imported without per-request records. */
int imports_summary_only(json_t *run);

#endif
