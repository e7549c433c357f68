/* runs.h - the run history: runs, their workers and records in the store.
 *
 * Writes go through the store's writer thread (store_exec / store_post);
 * reads borrow a reader connection. JSON results are new references the
 * caller owns (json_decref). Run ids are positive.
 */
#ifndef HR_RUNS_H
#define HR_RUNS_H

#include <jansson.h>
#include <stdint.h>

#include "record.h"
#include "store.h"

/* Run states as stored and served. */
#define RUN_QUEUED "queued"
#define RUN_RUNNING "running"
#define RUN_SUCCEEDED "succeeded"
#define RUN_FAILED "failed"
#define RUN_CANCELLED "cancelled"
#define RUN_INTERRUPTED "interrupted"

int run_state_is_terminal(const char *state);

/* Inserts a queued run. spec: the normalised spec (borrowed). */
int runs_create(struct store *s, json_t *spec, int64_t *id, char *err);

/* Marks runs left 'running' by a previous daemon as 'interrupted'.
 * Returns how many, or -1. */
int runs_recover(struct store *s, char *err);

/* Takes the oldest queued run and marks it running. Returns 1 and sets
 * *id and *spec (new reference), 0 when none is queued, -1 on error. */
int runs_claim_next(struct store *s, int64_t *id, json_t **spec, char *err);

/* Cancel request from the API. Returns 0 and sets *state_after to the
 * state once the request is taken (cancelled for a queued run, running
 * for a running one, which the runner then stops); -1 with err on error;
 * -404 unknown id; -409 already finished (*state_after set). */
int runs_cancel(struct store *s, int64_t id, const char **state_after, char *err);

/* Ends a run: state, reason (may be NULL), summary (borrowed, may be NULL). */
int runs_finish(struct store *s, int64_t id, const char *state, const char *reason,
		json_t *summary, char *err);

/* Time zero of the run's clock, as wall-clock nanoseconds. */
void runs_set_t0(struct store *s, int64_t id, int64_t t0_wall_ns);
/* Latest progress counters (borrowed), stored asynchronously. */
void runs_set_progress(struct store *s, int64_t id, json_t *progress);
/* Worker bookkeeping (asynchronous). detail may be NULL. */
void runs_worker_update(struct store *s, int64_t id, int idx, int pid, int64_t mono_anchor,
			int64_t wall_anchor, const char *state, int exit_status, const char *detail);

/* Queues a batch of records for insertion; takes ownership of recs. */
void runs_add_records(struct store *s, int64_t id, struct hr_record *recs, size_t n);
/* Waits until everything queued so far is written. */
int runs_sync(struct store *s);

/* Record batches whose insertion failed so far (their savepoint rolled
 * back; all runs), and the last such error into msg (n bytes, may be
 * NULL). A failed commit of the whole batch is store_commit_status's. */
long long runs_record_failures(char *msg, size_t n);
/* How many records of the run the store holds (committed), or -1. */
long long runs_count_records(struct store *s, int64_t id);
/* The runs still marked 'running': a new array of {"id", "spec"} (spec
 * null if unreadable). 0 or -1. */
int runs_list_running(struct store *s, json_t **out, char *err);

/* The columns of a run as the API shows it (runs r), in the order
 * runs_row reads them; a query may select more after them. */
#define RUNS_ROW_COLS                                                                       \
	"r.id, r.name, r.state, r.labels, r.created_at, r.started_at, r.finished_at, r.reason, " \
	"r.progress, r.fingerprint, r.note, r.pinned, r.group_id, r.verdict, r.valid, "         \
	"r.gates_passed"
#define RUNS_ROW_NCOLS 16
/* The run object of a row selected with RUNS_ROW_COLS first (new reference). */
json_t *runs_row(sqlite3_stmt *st);
/* One column as JSON, null when SQL NULL: a wall time in ms as RFC 3339,
 * text, a JSON text parsed (null when unparseable), an integer, a boolean. */
json_t *runs_col_time(sqlite3_stmt *st, int col);
json_t *runs_col_text(sqlite3_stmt *st, int col);
json_t *runs_col_json(sqlite3_stmt *st, int col);
json_t *runs_col_int(sqlite3_stmt *st, int col);
json_t *runs_col_bool(sqlite3_stmt *st, int col);

/* Reads. Return 0 and *out, -404 unknown id, -1 on error. */
int runs_get(struct store *s, int64_t id, int with_spec, json_t **out, char *err);
/* runs_get with its spec, without the spec and summary members: those come
 * back as the stored JSON text (NULL: none), for an answer to splice in
 * without parsing and encoding them again (GET /runs/{id}: most of its
 * cost). Free both. */
int runs_get_text(struct store *s, int64_t id, json_t **out, char **spec, char **summary,
		  char *err);
/* The stored summary JSON text (caller frees) or NULL with *rc = -404 / -409 (none yet). */
char *runs_summary_text(struct store *s, int64_t id, int *rc);
int runs_counts(struct store *s, int *queued, int *running);
/* How many runs are in each of states[0..n) (out[i]); 0 or -1. */
int runs_count_by_state(struct store *s, const char *const *states, int n, long long *out);
/* How many runs of run id's repeat group are still queued (0 when it has
 * no group), or -1. */
int runs_group_queued(struct store *s, int64_t id);
/* The run's time zero as wall-clock ns: 0 when it never started, -404
 * unknown id, -1 on error. */
int64_t runs_t0_wall(struct store *s, int64_t id);

/* Cursor over a run's records in (worker, seq) order, decoding each into
 * a record (chunk times included). Holds a reader connection until freed. */
struct rec_cursor;
struct rec_cursor *rec_cursor_open(struct store *s, int64_t run_id);
/* The same from (worker, seq) on (keyset paging, one record). */
struct rec_cursor *rec_cursor_open_at(struct store *s, int64_t run_id, uint32_t worker,
				      uint64_t seq);
/* Returns 1 with *r filled (valid until the next call), 0 at the end, -1 on error. */
int rec_cursor_next(struct rec_cursor *c, const struct hr_record **r);
void rec_cursor_free(struct rec_cursor *c);

/* Registers the SQL functions the schema migrations use (hr_record_pack,
 * schema/004) on a connection. Returns 0 or -1. */
int runs_sql_functions(sqlite3 *db);

/* Formats wall-clock milliseconds as RFC 3339 UTC with milliseconds. buf >= 32. */
void fmt_time_ms(char *buf, int64_t ms);

#endif
