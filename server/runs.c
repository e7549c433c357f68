/* runs.c - SQL for runs, workers and records (see runs.h). */
#include "runs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynbuf.h"
#include "history.h"
#include "imports.h"
#include "hrlimits.h"
#include "reccodec.h"
#include "util.h"

static int64_t now_ms(void)
{
	return wall_ns() / 1000000;
}

int run_state_is_terminal(const char *st)
{
	return strcmp(st, RUN_SUCCEEDED) == 0 || strcmp(st, RUN_FAILED) == 0 ||
	       strcmp(st, RUN_CANCELLED) == 0 || strcmp(st, RUN_INTERRUPTED) == 0;
}

void fmt_time_ms(char *buf, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

static int sql_fail(struct store_tx *tx, char *err)
{
	return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
}

/* --- create --------------------------------------------------------------- */

struct create_args {
	json_t *spec;
	int64_t id;
};

static int create_job(struct store_tx *tx, void *arg, char *err)
{
	struct create_args *a = arg;
	static const char sql[] = "INSERT INTO runs (name, state, spec, labels, created_at, id) "
				  "VALUES (?, 'queued', ?, ?, ?, ?)";
	int64_t id = history_tx_next_run_id(tx, err);
	if (id < 0)
		return -1;
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_int64(st, 5, id);
	char *spec = json_dumps(a->spec, JSON_COMPACT);
	char *labels = json_dumps(json_object_get(a->spec, "labels"), JSON_COMPACT);
	const char *name = json_string_value(json_object_get(a->spec, "name"));
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, spec, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, labels ? labels : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, now_ms());
	int rc = sqlite3_step(st);
	free(spec);
	free(labels);
	if (rc != SQLITE_DONE)
		return sql_fail(tx, err);
	a->id = id;
	return history_tx_index_run(tx, a->id, a->spec, err);
}

int runs_create(struct store *s, json_t *spec, int64_t *id, char *err)
{
	struct create_args a = {.spec = spec};
	if (store_exec(s, create_job, &a, err) < 0)
		return -1;
	*id = a.id;
	return 0;
}

/* --- recover / claim / cancel / finish -------------------------------------- */

static int recover_job(struct store_tx *tx, void *arg, char *err)
{
	static const char sql[] =
		"UPDATE runs SET state = 'interrupted', finished_at = ?, "
		"reason = 'the daemon stopped while the run was running' WHERE state = 'running'";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_int64(st, 1, now_ms());
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx, err);
	*(int *)arg = sqlite3_changes(tx->db);
	return 0;
}

int runs_recover(struct store *s, char *err)
{
	int n = 0;
	if (store_exec(s, recover_job, &n, err) < 0)
		return -1;
	return n;
}

struct claim_args {
	int64_t id;
	char *spec;
};

static int claim_job(struct store_tx *tx, void *arg, char *err)
{
	struct claim_args *a = arg;
	static const char q[] = "SELECT id, spec FROM runs WHERE state = 'queued' ORDER BY id LIMIT 1";
	static const char u[] = "UPDATE runs SET state = 'running', started_at = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return sql_fail(tx, err);
	a->id = sqlite3_column_int64(st, 0);
	a->spec = xstrdup((const char *)sqlite3_column_text(st, 1));
	sqlite3_reset(st);
	st = store_tx_stmt(tx, u);
	sqlite3_bind_int64(st, 1, now_ms());
	sqlite3_bind_int64(st, 2, a->id);
	if (sqlite3_step(st) != SQLITE_DONE) {
		free(a->spec);
		a->spec = NULL;
		return sql_fail(tx, err);
	}
	return 0;
}

int runs_claim_next(struct store *s, int64_t *id, json_t **spec, char *err)
{
	struct claim_args a = {0};
	if (store_exec(s, claim_job, &a, err) < 0)
		return -1;
	if (!a.spec)
		return 0;
	*id = a.id;
	*spec = json_loads(a.spec, 0, NULL);
	free(a.spec);
	if (!*spec)
		return errf(err, "run %lld: stored spec is not valid JSON", (long long)a.id);
	return 1;
}

struct cancel_args {
	int64_t id;
	int rc;
	const char *state;
};

static const char *static_state(const char *s)
{
	static const char *const all[] = {RUN_QUEUED,	 RUN_RUNNING,	RUN_SUCCEEDED,
					  RUN_FAILED,	 RUN_CANCELLED, RUN_INTERRUPTED};
	for (size_t i = 0; i < HR_ARRAY_LEN(all); i++)
		if (s && strcmp(s, all[i]) == 0)
			return all[i];
	return "?";
}

static int cancel_job(struct store_tx *tx, void *arg, char *err)
{
	struct cancel_args *a = arg;
	static const char q[] = "SELECT state FROM runs WHERE id = ?";
	static const char uq[] = "UPDATE runs SET state = 'cancelled', finished_at = ?, "
				 "reason = 'cancelled before it started' WHERE id = ?";
	static const char ur[] = "UPDATE runs SET cancel_requested = 1 WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	sqlite3_bind_int64(st, 1, a->id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		a->rc = -404;
		return 0;
	}
	if (rc != SQLITE_ROW)
		return sql_fail(tx, err);
	a->state = static_state((const char *)sqlite3_column_text(st, 0));
	sqlite3_reset(st);
	if (strcmp(a->state, RUN_QUEUED) == 0) {
		st = store_tx_stmt(tx, uq);
		sqlite3_bind_int64(st, 1, now_ms());
		sqlite3_bind_int64(st, 2, a->id);
		a->state = RUN_CANCELLED;
	} else if (strcmp(a->state, RUN_RUNNING) == 0) {
		st = store_tx_stmt(tx, ur);
		sqlite3_bind_int64(st, 1, a->id);
	} else {
		a->rc = -409;
		return 0;
	}
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx, err);
	a->rc = 0;
	return 0;
}

int runs_cancel(struct store *s, int64_t id, const char **state_after, char *err)
{
	struct cancel_args a = {.id = id};
	if (store_exec(s, cancel_job, &a, err) < 0)
		return -1;
	*state_after = a.state;
	return a.rc;
}

struct finish_args {
	int64_t id;
	const char *state, *reason;
	char *summary;
};

static int finish_job(struct store_tx *tx, void *arg, char *err)
{
	struct finish_args *a = arg;
	static const char sql[] = "UPDATE runs SET state = ?, reason = ?, summary = ?, "
				  "finished_at = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, a->state, -1, SQLITE_STATIC);
	if (a->reason)
		sqlite3_bind_text(st, 2, a->reason, -1, SQLITE_STATIC);
	if (a->summary)
		sqlite3_bind_text(st, 3, a->summary, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms());
	sqlite3_bind_int64(st, 5, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx, err);
	return 0;
}

int runs_finish(struct store *s, int64_t id, const char *state, const char *reason,
		json_t *summary, char *err)
{
	struct finish_args a = {.id = id, .state = state, .reason = reason};
	a.summary = summary ? json_dumps(summary, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	int rc = store_exec(s, finish_job, &a, err);
	free(a.summary);
	return rc;
}

/* --- small asynchronous updates ---------------------------------------------- */

struct kv_args {
	int64_t id;
	int64_t n;
	char *text;
};

static void kv_free(void *p)
{
	struct kv_args *a = p;
	free(a->text);
	free(a);
}

static int t0_job(struct store_tx *tx, void *arg, char *err)
{
	struct kv_args *a = arg;
	static const char sql[] = "UPDATE runs SET t0_wall_ns = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_int64(st, 1, a->n);
	sqlite3_bind_int64(st, 2, a->id);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(tx, err);
}

void runs_set_t0(struct store *s, int64_t id, int64_t t0_wall_ns)
{
	struct kv_args *a = xcalloc(1, sizeof *a);
	a->id = id;
	a->n = t0_wall_ns;
	store_post(s, t0_job, a, kv_free);
}

static int progress_job(struct store_tx *tx, void *arg, char *err)
{
	struct kv_args *a = arg;
	static const char sql[] = "UPDATE runs SET progress = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, a->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a->id);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(tx, err);
}

void runs_set_progress(struct store *s, int64_t id, json_t *progress)
{
	struct kv_args *a = xcalloc(1, sizeof *a);
	a->id = id;
	a->text = json_dumps(progress, JSON_COMPACT);
	store_post(s, progress_job, a, kv_free);
}

struct worker_args {
	int64_t id, mono, wall;
	int idx, pid, exit_status;
	const char *state;
	char *detail;
};

static void worker_args_free(void *p)
{
	struct worker_args *a = p;
	free(a->detail);
	free(a);
}

static int worker_job(struct store_tx *tx, void *arg, char *err)
{
	struct worker_args *a = arg;
	static const char sql[] =
		"INSERT INTO run_workers (run_id, idx, pid, mono_anchor_ns, wall_anchor_ns, state, "
		"exit_status, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
		"ON CONFLICT (run_id, idx) DO UPDATE SET "
		"pid = coalesce(?3, pid), mono_anchor_ns = coalesce(?4, mono_anchor_ns), "
		"wall_anchor_ns = coalesce(?5, wall_anchor_ns), state = ?6, "
		"exit_status = coalesce(?7, exit_status), detail = coalesce(?8, detail)";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_int64(st, 1, a->id);
	sqlite3_bind_int(st, 2, a->idx);
	if (a->pid > 0)
		sqlite3_bind_int(st, 3, a->pid);
	if (a->mono)
		sqlite3_bind_int64(st, 4, a->mono);
	if (a->wall)
		sqlite3_bind_int64(st, 5, a->wall);
	sqlite3_bind_text(st, 6, a->state, -1, SQLITE_STATIC);
	if (a->exit_status != -1)
		sqlite3_bind_int(st, 7, a->exit_status);
	if (a->detail)
		sqlite3_bind_text(st, 8, a->detail, -1, SQLITE_STATIC);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(tx, err);
}

void runs_worker_update(struct store *s, int64_t id, int idx, int pid, int64_t mono_anchor,
			int64_t wall_anchor, const char *state, int exit_status, const char *detail)
{
	struct worker_args *a = xcalloc(1, sizeof *a);
	a->id = id;
	a->idx = idx;
	a->pid = pid;
	a->mono = mono_anchor;
	a->wall = wall_anchor;
	a->state = state; /* static strings only */
	a->exit_status = exit_status;
	a->detail = detail ? xstrdup(detail) : NULL;
	store_post(s, worker_job, a, worker_args_free);
}

/* --- records ------------------------------------------------------------------- */

/* Each row's data blob is the stored form of lib/reccodec.h. */

struct records_args {
	int64_t id;
	struct hr_record *recs;
	size_t n;
};

static void records_free(void *p)
{
	struct records_args *a = p;
	for (size_t i = 0; i < a->n; i++)
		record_release(&a->recs[i]);
	free(a->recs);
	free(a);
}

static const char insert_record_sql[] =
	"INSERT INTO records (run_id, worker, seq, data) VALUES (?, ?, ?, ?)";
static const char replace_record_sql[] =
	"INSERT OR REPLACE INTO records (run_id, worker, seq, data) VALUES (?, ?, ?, ?)";

/* Record batches whose insertion failed (their savepoint rolled back),
 * and the last error: runs_record_failures. */
static struct {
	pthread_mutex_t mu;
	long long batches;
	char msg[160];
} write_fail = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int records_job(struct store_tx *tx, void *arg, char *err)
{
	struct records_args *a = arg;
	/* Plain INSERT: with foreign keys on, OR REPLACE costs a statement
	 * journal on every row. A record stored twice (which a worker does not
	 * do) still replaces the first, through the second statement. Every
	 * parameter is bound on every row, so the statement is only reset. */
	sqlite3_stmt *st = store_tx_stmt(tx, insert_record_sql);
	size_t cap = 4096;
	unsigned char *buf = xmalloc(cap);
	int rc = 0;
	for (size_t i = 0; i < a->n && rc == 0; i++) {
		const struct hr_record *r = &a->recs[i];
		size_t ml = r->error_msg ? strlen(r->error_msg) : 0;
		size_t need = rec_bound(r, ml);
		if (need > cap) {
			cap = need;
			free(buf);
			buf = xmalloc(cap);
		}
		size_t len = (size_t)(rec_pack(buf, r, ml) - buf);
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, a->id);
		sqlite3_bind_int64(st, 2, r->worker);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)r->seq);
		sqlite3_bind_blob(st, 4, buf, (int)len, SQLITE_STATIC);
		int step = sqlite3_step(st);
		if (step == SQLITE_CONSTRAINT &&
		    sqlite3_extended_errcode(tx->db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
			sqlite3_reset(st);
			sqlite3_stmt *rep = store_tx_stmt(tx, replace_record_sql);
			sqlite3_bind_int64(rep, 1, a->id);
			sqlite3_bind_int64(rep, 2, r->worker);
			sqlite3_bind_int64(rep, 3, (sqlite3_int64)r->seq);
			sqlite3_bind_blob(rep, 4, buf, (int)len, SQLITE_STATIC);
			step = sqlite3_step(rep);
			sqlite3_reset(rep);
		}
		if (step != SQLITE_DONE)
			rc = sql_fail(tx, err);
	}
	sqlite3_reset(st);
	free(buf);
	if (rc < 0) {
		pthread_mutex_lock(&write_fail.mu);
		write_fail.batches++;
		snprintf(write_fail.msg, sizeof write_fail.msg, "%s", err);
		pthread_mutex_unlock(&write_fail.mu);
	}
	return rc;
}

long long runs_record_failures(char *msg, size_t n)
{
	pthread_mutex_lock(&write_fail.mu);
	long long k = write_fail.batches;
	if (msg && n)
		snprintf(msg, n, "%s", write_fail.msg);
	pthread_mutex_unlock(&write_fail.mu);
	return k;
}

/* hr_record_pack(req_id, phase, session, turn, flags, http_status, error,
 * error_msg, intended_ns, start_ns, headers_ns, first_output_ns, end_ns,
 * done_ns, isl, osl, reasoning_tokens, isl_src, osl_src, chunks): the
 * stored blob of a record from the columns of schema 001, for the
 * migration to the compact form (schema/004). */
static void sql_record_pack(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct hr_record r;
	record_init(&r);
	r.req_id = (uint64_t)sqlite3_value_int64(argv[0]);
	r.phase = (uint8_t)sqlite3_value_int(argv[1]);
	r.session = (uint32_t)sqlite3_value_int64(argv[2]);
	r.turn = (uint32_t)sqlite3_value_int64(argv[3]);
	r.flags = (uint8_t)sqlite3_value_int(argv[4]);
	r.http_status = sqlite3_value_int(argv[5]);
	r.error = (uint8_t)sqlite3_value_int(argv[6]);
	const char *msg = sqlite3_value_type(argv[7]) == SQLITE_NULL
				  ? NULL
				  : (const char *)sqlite3_value_text(argv[7]);
	int64_t *t[6] = {&r.intended_ns,       &r.start_ns, &r.headers_ns,
			 &r.first_output_ns, &r.end_ns,   &r.done_ns};
	for (int i = 0; i < 6; i++)
		*t[i] = sqlite3_value_type(argv[8 + i]) == SQLITE_NULL
				? HR_NO_TIME
				: sqlite3_value_int64(argv[8 + i]);
	int32_t *c[3] = {&r.isl, &r.osl, &r.reasoning_tokens};
	for (int i = 0; i < 3; i++)
		*c[i] = sqlite3_value_type(argv[14 + i]) == SQLITE_NULL
				? -1
				: sqlite3_value_int(argv[14 + i]);
	r.isl_src = (uint8_t)sqlite3_value_int(argv[17]);
	r.osl_src = (uint8_t)sqlite3_value_int(argv[18]);
	size_t cap = 0;
	long n = record_chunks_decode(sqlite3_value_blob(argv[19]),
				      (size_t)sqlite3_value_bytes(argv[19]), r.start_ns, &r.chunk_ns,
				      &cap);
	if (n < 0) {
		free(r.chunk_ns);
		sqlite3_result_error(ctx, "a stored chunk blob is malformed", -1);
		return;
	}
	r.n_chunks = (uint32_t)n;
	r.error_msg = (char *)msg;
	size_t ml = msg ? strlen(msg) : 0;
	unsigned char *buf = xmalloc(rec_bound(&r, ml));
	size_t len = (size_t)(rec_pack(buf, &r, ml) - buf);
	free(r.chunk_ns);
	sqlite3_result_blob(ctx, buf, (int)len, free);
}

int runs_sql_functions(sqlite3 *db)
{
	return sqlite3_create_function(db, "hr_record_pack", 20, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
				       NULL, sql_record_pack, NULL, NULL) == SQLITE_OK
		       ? 0
		       : -1;
}

void runs_add_records(struct store *s, int64_t id, struct hr_record *recs, size_t n)
{
	struct records_args *a = xcalloc(1, sizeof *a);
	a->id = id;
	a->recs = recs;
	a->n = n;
	store_post(s, records_job, a, records_free);
}

static int noop_job(struct store_tx *tx, void *arg, char *err)
{
	return 0;
}

int runs_sync(struct store *s)
{
	return store_exec(s, noop_job, NULL, NULL);
}

/* --- reads ------------------------------------------------------------------------ */

json_t *runs_col_time(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	char buf[32];
	fmt_time_ms(buf, sqlite3_column_int64(st, col));
	return json_string(buf);
}

json_t *runs_col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? json_string((const char *)t) : json_null();
}

json_t *runs_col_json(sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	json_t *j = t ? json_loads(t, 0, NULL) : NULL;
	return j ? j : json_null();
}

json_t *runs_col_int(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	return json_integer(sqlite3_column_int64(st, col));
}

json_t *runs_col_bool(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	return json_boolean(sqlite3_column_int(st, col));
}

json_t *runs_row(sqlite3_stmt *st)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 0)));
	json_object_set_new(o, "name", runs_col_text(st, 1));
	json_object_set_new(o, "state", runs_col_text(st, 2));
	json_t *labels = runs_col_json(st, 3);
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	json_object_set_new(o, "labels", labels);
	json_object_set_new(o, "created_at", runs_col_time(st, 4));
	json_object_set_new(o, "started_at", runs_col_time(st, 5));
	json_object_set_new(o, "finished_at", runs_col_time(st, 6));
	json_object_set_new(o, "reason", runs_col_text(st, 7));
	json_object_set_new(o, "progress", runs_col_json(st, 8));
	json_object_set_new(o, "fingerprint", runs_col_text(st, 9));
	json_object_set_new(o, "note", runs_col_text(st, 10));
	json_object_set_new(o, "pinned", json_boolean(sqlite3_column_int(st, 11)));
	json_object_set_new(o, "group_id", runs_col_int(st, 12));
	json_object_set_new(o, "verdict", runs_col_text(st, 13));
	json_object_set_new(o, "valid", runs_col_bool(st, 14));
	json_t *g = json_null();
	if (sqlite3_column_type(st, 15) != SQLITE_NULL)
		g = json_string(sqlite3_column_int(st, 15) ? "passed" : "failed");
	json_object_set_new(o, "gates", g);
	return o;
}

/* The stored JSON text of a column, copied, or NULL when it is NULL or
 * not an object's text (a stored spec or summary is always an object). */
static char *col_object_text(sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	if (!t)
		return NULL;
	size_t n = strlen(t);
	while (n && (t[n - 1] == ' ' || t[n - 1] == '\n'))
		n--;
	if (n < 2 || t[0] != '{' || t[n - 1] != '}')
		return NULL;
	return xstrndup(t, n);
}

/* One run's row; with texts, its spec and summary as stored text instead
 * of parsed members (NULL: none). */
static int get_run(struct store *s, int64_t id, int with_spec, json_t **out, char **spec,
		   char **summary, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT " RUNS_ROW_COLS ", r.spec, r.summary FROM runs r "
			       "WHERE r.id = ?", -1, &st, NULL) != SQLITE_OK) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		*out = runs_row(st);
		if (spec) {
			*spec = col_object_text(st, RUNS_ROW_NCOLS);
			*summary = col_object_text(st, RUNS_ROW_NCOLS + 1);
		} else if (with_spec) {
			json_object_set_new(*out, "spec", runs_col_json(st, RUNS_ROW_NCOLS));
			json_object_set_new(*out, "summary", runs_col_json(st, RUNS_ROW_NCOLS + 1));
		}
		if (with_spec || spec)
			imports_attach(db, id, *out); /* an imported run's origin */
		rc = 0;
	} else if (step == SQLITE_DONE) {
		rc = -404;
	} else {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
	}
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

int runs_get(struct store *s, int64_t id, int with_spec, json_t **out, char *err)
{
	return get_run(s, id, with_spec, out, NULL, NULL, err);
}

int runs_get_text(struct store *s, int64_t id, json_t **out, char **spec, char **summary,
		  char *err)
{
	*spec = *summary = NULL;
	return get_run(s, id, 1, out, spec, summary, err);
}

char *runs_summary_text(struct store *s, int64_t id, int *rc)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	*rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT summary FROM runs WHERE id = ?", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		int step = sqlite3_step(st);
		if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
			text = xstrdup((const char *)sqlite3_column_text(st, 0));
			*rc = 0;
		} else if (step == SQLITE_ROW) {
			*rc = -409;
		} else if (step == SQLITE_DONE) {
			*rc = -404;
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return text;
}

int runs_counts(struct store *s, int *queued, int *running)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	*queued = *running = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT sum(state = 'queued'), sum(state = 'running') FROM runs "
			       "WHERE state IN ('queued', 'running')",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*queued = sqlite3_column_int(st, 0);
		*running = sqlite3_column_int(st, 1);
		rc = 0;
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

int runs_count_by_state(struct store *s, const char *const *states, int n, long long *out)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	for (int i = 0; i < n; i++)
		out[i] = 0;
	if (sqlite3_prepare_v2(db, "SELECT state, count(*) FROM runs GROUP BY state", -1, &st,
			       NULL) == SQLITE_OK) {
		int step;
		while ((step = sqlite3_step(st)) == SQLITE_ROW) {
			const char *state = (const char *)sqlite3_column_text(st, 0);
			for (int i = 0; i < n && state; i++)
				if (strcmp(states[i], state) == 0)
					out[i] = sqlite3_column_int64(st, 1);
		}
		rc = step == SQLITE_DONE ? 0 : -1;
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

/* The single count an SQL query with one id parameter gives, or -1. */
static long long count_by_id(struct store *s, const char *sql, int64_t id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	long long n = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return n;
}

int runs_group_queued(struct store *s, int64_t id)
{
	return (int)count_by_id(s,
				"SELECT count(*) FROM runs WHERE state = 'queued' AND group_id = "
				"(SELECT group_id FROM runs WHERE id = ?)",
				id);
}

long long runs_count_records(struct store *s, int64_t id)
{
	return count_by_id(s, "SELECT count(*) FROM records WHERE run_id = ?", id);
}

int runs_list_running(struct store *s, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(db,
			       "SELECT id, spec FROM runs WHERE state = 'running' ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 1);
		json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
		json_array_append_new(arr, json_pack("{s:I, s:o}", "id",
						     (json_int_t)sqlite3_column_int64(st, 0), "spec",
						     spec ? spec : json_null()));
	}
	if (step != SQLITE_DONE) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	if (rc == 0)
		*out = arr;
	else
		json_decref(arr);
	return rc;
}

int64_t runs_t0_wall(struct store *s, int64_t id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int64_t rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT t0_wall_ns FROM runs WHERE id = ?", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		int step = sqlite3_step(st);
		if (step == SQLITE_ROW)
			rc = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0
								       : sqlite3_column_int64(st, 0);
		else if (step == SQLITE_DONE)
			rc = -404;
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

/* --- record cursor ------------------------------------------------------------------ */

struct rec_cursor {
	struct store *store;
	sqlite3 *db;
	sqlite3_stmt *st;
	struct hr_record rec;
	struct rec_mem mem;
};

struct rec_cursor *rec_cursor_open(struct store *s, int64_t run_id)
{
	struct rec_cursor *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->db = store_reader(s);
	if (sqlite3_prepare_v2(c->db,
			       "SELECT worker, seq, data FROM records WHERE run_id = ? "
			       "ORDER BY worker, seq",
			       -1, &c->st, NULL) != SQLITE_OK) {
		rec_cursor_free(c);
		return NULL;
	}
	sqlite3_bind_int64(c->st, 1, run_id);
	return c;
}

struct rec_cursor *rec_cursor_open_at(struct store *s, int64_t run_id, uint32_t worker,
				      uint64_t seq)
{
	struct rec_cursor *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->db = store_reader(s);
	if (sqlite3_prepare_v2(c->db,
			       "SELECT worker, seq, data FROM records WHERE run_id = ? "
			       "AND (worker, seq) >= (?, ?) ORDER BY worker, seq",
			       -1, &c->st, NULL) != SQLITE_OK) {
		rec_cursor_free(c);
		return NULL;
	}
	sqlite3_bind_int64(c->st, 1, run_id);
	sqlite3_bind_int64(c->st, 2, (sqlite3_int64)worker);
	sqlite3_bind_int64(c->st, 3, (sqlite3_int64)seq);
	return c;
}

int rec_cursor_next(struct rec_cursor *c, const struct hr_record **out)
{
	int rc = sqlite3_step(c->st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return -1;
	struct hr_record *r = &c->rec;
	r->worker = (uint32_t)sqlite3_column_int64(c->st, 0);
	r->seq = (uint64_t)sqlite3_column_int64(c->st, 1);
	const void *blob = sqlite3_column_blob(c->st, 2);
	if (!blob || rec_unpack(blob, (size_t)sqlite3_column_bytes(c->st, 2), r, &c->mem) < 0)
		return -1;
	*out = r;
	return 1;
}

void rec_cursor_free(struct rec_cursor *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->st);
	store_reader_put(c->store, c->db);
	free(c->mem.chunks);
	free(c->mem.msg);
	free(c);
}
