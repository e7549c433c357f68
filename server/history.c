/* history.c - filtered run lists, labels, deletion, retention, groups,
 * baselines, headline figures and series (see history.h). */
#include "history.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "infer.h"
#include "jsonesc.h"
#include "metrics.h"
#include "runs.h"
#include "stats.h"
#include "util.h"

#define DELETE_BATCH 20000 /* records removed per writer job */

static int64_t now_ms(void)
{
	return wall_ns() / 1000000;
}

static int sql_fail(sqlite3 *db, char *err)
{
	return errf(err, "sqlite: %s", sqlite3_errmsg(db));
}

/* --- fingerprints ------------------------------------------------------------ */

void history_fingerprint(json_t *spec, char *out)
{
	static const char *const drop[] = {"name", "labels", "repeat", "validity", "gates"};
	json_t *c = json_copy(spec); /* shallow: only top-level members are dropped */
	for (size_t i = 0; c && i < HR_ARRAY_LEN(drop); i++)
		json_object_del(c, drop[i]);
	char *text = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17))
		       : NULL;
	json_decref(c);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!text || EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL) != 1 || n < 8)
		memset(md, 0, sizeof md);
	free(text);
	for (int i = 0; i < HISTORY_FP_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void sql_fingerprint(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *t = (const char *)sqlite3_value_text(argv[0]);
	json_t *spec = t ? json_loads(t, 0, NULL) : NULL;
	if (!json_is_object(spec)) {
		json_decref(spec);
		sqlite3_result_null(ctx);
		return;
	}
	char fp[HISTORY_FP_LEN + 1];
	history_fingerprint(spec, fp);
	json_decref(spec);
	sqlite3_result_text(ctx, fp, -1, SQLITE_TRANSIENT);
}

int history_sql_functions(sqlite3 *db)
{
	return sqlite3_create_function(db, "hr_fingerprint", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
				       NULL, sql_fingerprint, NULL, NULL) == SQLITE_OK
		       ? 0
		       : -1;
}

static int put_labels(struct store_tx *tx, int64_t id, json_t *labels, char *err)
{
	static const char del[] = "DELETE FROM run_labels WHERE run_id = ?";
	static const char ins[] = "INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)";
	sqlite3_stmt *st = store_tx_stmt(tx, del);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	const char *k;
	json_t *v;
	json_object_foreach(labels, k, v)
	{
		if (!json_is_string(v))
			continue;
		st = store_tx_stmt(tx, ins);
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, k, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, json_string_value(v), -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			return sql_fail(tx->db, err);
	}
	return 0;
}

int64_t history_tx_next_run_id(struct store_tx *tx, char *err)
{
	static const char q[] = "UPDATE run_id_hwm SET last = max(last, (SELECT coalesce(max(id), "
				"0) FROM runs)) + 1 RETURNING last";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	int64_t id = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_reset(st);
	if (id < 0)
		sql_fail(tx->db, err);
	return id;
}

int history_tx_index_run(struct store_tx *tx, int64_t id, json_t *spec, char *err)
{
	static const char sql[] = "UPDATE runs SET fingerprint = ? WHERE id = ?";
	char fp[HISTORY_FP_LEN + 1];
	history_fingerprint(spec, fp);
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, fp, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	return put_labels(tx, id, json_object_get(spec, "labels"), err);
}

/* --- creating runs (repeat groups) --------------------------------------------- */

struct create_many {
	json_t *spec;
	int count, max_queued, queued, full;
	double cooldown_s;
	int64_t *ids, group;
	struct submitter *by;
	int mine_full;
};

static int create_many_job(struct store_tx *tx, void *arg, char *err)
{
	struct create_many *a = arg;
	static const char g[] = "INSERT INTO run_groups (name, count, cooldown_s, created_at) "
				"VALUES (?, ?, ?, ?)";
	static const char r[] = "INSERT INTO runs (id, name, state, spec, labels, created_at, "
				"group_id, submitted_by) VALUES (?6, ?1, 'queued', ?2, ?3, ?4, ?5, ?7)";
	static const char q[] = "SELECT count(*) FROM runs WHERE state = 'queued'";
	static const char qm[] = "SELECT count(*) FROM runs WHERE state = 'queued' AND "
				 "submitted_by = ?";
	const char *name = json_string_value(json_object_get(a->spec, "name"));
	const char *who = a->by->who && *a->by->who ? a->by->who : "local";
	int64_t now = now_ms();
	a->group = 0;
	/* the token's own bound and the queue's, counted in the transaction
	 * that inserts: concurrent submissions cannot pass either together */
	if (a->by->max_queued > 0) {
		sqlite3_stmt *st = store_tx_stmt(tx, qm);
		sqlite3_bind_text(st, 1, who, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_ROW)
			return sql_fail(tx->db, err);
		a->by->queued = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (a->by->queued + a->count > a->by->max_queued) {
			a->mine_full = 1;
			return errf(err, "the token's queued runs are at its max_queued");
		}
	}
	if (a->max_queued > 0) {
		sqlite3_stmt *st = store_tx_stmt(tx, q);
		if (sqlite3_step(st) != SQLITE_ROW)
			return sql_fail(tx->db, err);
		a->queued = sqlite3_column_int(st, 0);
		sqlite3_reset(st);
		if (a->queued + a->count > a->max_queued) {
			a->full = 1;
			return errf(err, "the run queue is full");
		}
	}
	if (a->count > 1) {
		sqlite3_stmt *st = store_tx_stmt(tx, g);
		sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, a->count);
		sqlite3_bind_double(st, 3, a->cooldown_s);
		sqlite3_bind_int64(st, 4, now);
		if (sqlite3_step(st) != SQLITE_DONE)
			return sql_fail(tx->db, err);
		a->group = sqlite3_last_insert_rowid(tx->db);
	}
	char *spec = json_dumps(a->spec, JSON_COMPACT | JSON_REAL_PRECISION(17));
	char *labels = json_dumps(json_object_get(a->spec, "labels"), JSON_COMPACT);
	int rc = 0;
	for (int i = 0; i < a->count && rc == 0; i++) {
		sqlite3_stmt *st = store_tx_stmt(tx, r);
		sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, spec ? spec : "{}", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, labels ? labels : "{}", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, now);
		if (a->group)
			sqlite3_bind_int64(st, 5, a->group);
		int64_t id = history_tx_next_run_id(tx, err);
		if (id < 0) {
			rc = -1;
			break;
		}
		sqlite3_bind_int64(st, 6, id);
		sqlite3_bind_text(st, 7, who, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			rc = sql_fail(tx->db, err);
			break;
		}
		a->ids[i] = id;
		rc = history_tx_index_run(tx, a->ids[i], a->spec, err);
	}
	free(spec);
	free(labels);
	return rc;
}

int history_create_runs(struct store *s, json_t *spec, int count, double cooldown_s,
			int max_queued, struct submitter *by, int *queued, int64_t *ids,
			int64_t *group, char *err)
{
	struct create_many a = {.spec = spec, .count = count < 1 ? 1 : count,
				.max_queued = max_queued, .cooldown_s = cooldown_s, .ids = ids,
				.by = by};
	int rc = store_exec(s, create_many_job, &a, err);
	if (queued)
		*queued = a.queued;
	if (a.mine_full)
		return -429;
	if (a.full)
		return -503;
	if (rc < 0)
		return -1;
	*group = a.group;
	return 0;
}

/* --- selectors and lists ------------------------------------------------------- */

/* The WHERE clause of q (after "WHERE 1"), its parameters bound from ?100
 * on by bind_query. */
static void where_clause(const struct run_query *q, struct dynbuf *b)
{
	if (q->state)
		dynbuf_addstr(b, " AND r.state = ?100");
	if (q->name)
		dynbuf_addstr(b, " AND instr(lower(r.name), lower(?101)) > 0");
	if (q->since_ms >= 0)
		dynbuf_addstr(b, " AND r.created_at >= ?102");
	if (q->until_ms >= 0)
		dynbuf_addstr(b, " AND r.created_at <= ?103");
	if (q->fingerprint)
		dynbuf_addstr(b, " AND r.fingerprint = ?104");
	if (q->group_id)
		dynbuf_addstr(b, " AND r.group_id = ?105");
	for (int i = 0; i < q->n_sel; i++) {
		int k = 110 + 2 * i, v = k + 1;
		switch (q->sel[i].op) {
		case SEL_EQ:
			dynbuf_printf(b, " AND r.id IN (SELECT run_id FROM run_labels WHERE key = ?%d "
					 "AND value = ?%d)", k, v);
			break;
		case SEL_NE:
			dynbuf_printf(b, " AND NOT EXISTS (SELECT 1 FROM run_labels l WHERE "
					 "l.run_id = r.id AND l.key = ?%d AND l.value = ?%d)", k, v);
			break;
		case SEL_PRESENT:
			dynbuf_printf(b, " AND r.id IN (SELECT run_id FROM run_labels WHERE key = ?%d)",
				      k);
			break;
		default:
			dynbuf_printf(b, " AND NOT EXISTS (SELECT 1 FROM run_labels l WHERE "
					 "l.run_id = r.id AND l.key = ?%d)", k);
		}
	}
}

static void bind_query(sqlite3_stmt *st, const struct run_query *q)
{
	if (q->state)
		sqlite3_bind_text(st, 100, q->state, -1, SQLITE_STATIC);
	if (q->name)
		sqlite3_bind_text(st, 101, q->name, -1, SQLITE_STATIC);
	if (q->since_ms >= 0)
		sqlite3_bind_int64(st, 102, q->since_ms);
	if (q->until_ms >= 0)
		sqlite3_bind_int64(st, 103, q->until_ms);
	if (q->fingerprint)
		sqlite3_bind_text(st, 104, q->fingerprint, -1, SQLITE_STATIC);
	if (q->group_id)
		sqlite3_bind_int64(st, 105, q->group_id);
	for (int i = 0; i < q->n_sel; i++) {
		sqlite3_bind_text(st, 110 + 2 * i, q->sel[i].key, -1, SQLITE_STATIC);
		if (q->sel[i].op == SEL_EQ || q->sel[i].op == SEL_NE)
			sqlite3_bind_text(st, 111 + 2 * i, q->sel[i].value, -1, SQLITE_STATIC);
	}
}

int history_list(struct store *s, const struct run_query *q, json_t **out, char *err)
{
	struct list_cursor cur = {0};
	if (q->cursor && api_parse_cursor(q->cursor, q->sort_by, &cur) < 0)
		return -400 + 0 * errf(err, "'cursor' is not one this API gave out for this sort");
	struct dynbuf b;
	dynbuf_init(&b, 64 * 1024);
	const char *stat = q->sort_by == SORT_METRIC ? metric_stat_names[q->sort_stat] : NULL;
	/* the value sorted by, unknown (NULL) last: a metric's statistic, the
	 * client verdict from best to worst, or validity (invalid first) */
	char vexpr[96] = "";
	if (stat)
		snprintf(vexpr, sizeof vexpr, "m.%s", stat);
	else if (q->sort_by == SORT_VERDICT)
		snprintf(vexpr, sizeof vexpr, "CASE r.verdict WHEN 'ok' THEN 0 WHEN 'inconclusive' "
					      "THEN 1 WHEN 'client_bound' THEN 2 END");
	else if (q->sort_by == SORT_VALID)
		snprintf(vexpr, sizeof vexpr, "r.valid");
	const char *vx = vexpr[0] ? vexpr : NULL;
	/* The page's ids are chosen first (subquery k), reading only what the
	 * filters and the order need; only those rows are then read whole. A
	 * run's row holds its spec and summary, and the columns added after
	 * them (fingerprint ... gates_passed) lie behind the summary's overflow
	 * pages: reading every matching row whole before sorting cost several
	 * µs per match (docs/performance.md, "History"). */
	dynbuf_addstr(&b, "SELECT " RUNS_ROW_COLS);
	if (stat)
		dynbuf_printf(&b, ", k.v FROM (SELECT r.id AS id, m.%s AS v FROM runs r LEFT JOIN "
				  "run_metrics m ON m.run_id = r.id AND m.metric = ?90 WHERE 1", stat);
	else if (vx)
		dynbuf_printf(&b, ", k.v FROM (SELECT r.id AS id, %s AS v FROM runs r WHERE 1", vx);
	else
		dynbuf_addstr(&b, " FROM (SELECT r.id AS id FROM runs r WHERE 1");
	where_clause(q, &b);
	const char *lt = q->sort_desc ? "<" : ">", *dir = q->sort_desc ? "DESC" : "ASC";
	if (q->before)
		dynbuf_addstr(&b, " AND r.id < ?91");
	if (q->cursor) {
		if (q->sort_by == SORT_ID)
			dynbuf_printf(&b, " AND r.id %s ?92", lt);
		else if (q->sort_by == SORT_NAME)
			dynbuf_printf(&b, " AND (r.name %s ?95 OR (r.name = ?95 AND r.id %s ?92))", lt,
				      lt);
		else if (cur.kind == 'v')
			dynbuf_printf(&b, " AND ((%s) IS NULL OR (%s) %s ?93 OR ((%s) = ?93 AND "
					  "r.id %s ?92))", vx, vx, lt, vx, lt);
		else
			dynbuf_printf(&b, " AND (%s) IS NULL AND r.id %s ?92", vx, lt);
	}
	if (q->sort_by == SORT_ID)
		dynbuf_printf(&b, " ORDER BY r.id %s", dir);
	else if (q->sort_by == SORT_NAME)
		dynbuf_printf(&b, " ORDER BY r.name %s, r.id %s", dir, dir);
	else
		dynbuf_printf(&b, " ORDER BY (%s) IS NULL, (%s) %s, r.id %s", vx, vx, dir, dir);
	/* the page in the same order (CROSS JOIN: k drives, runs by id) */
	dynbuf_addstr(&b, " LIMIT ?94) k CROSS JOIN runs r ON r.id = k.id");
	if (q->sort_by == SORT_ID)
		dynbuf_printf(&b, " ORDER BY r.id %s", dir);
	else if (q->sort_by == SORT_NAME)
		dynbuf_printf(&b, " ORDER BY r.name %s, r.id %s", dir, dir);
	else
		dynbuf_printf(&b, " ORDER BY k.v IS NULL, k.v %s, r.id %s", dir, dir);

	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (!b.data || sqlite3_prepare_v2(db, b.data, -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	bind_query(st, q);
	if (stat)
		sqlite3_bind_text(st, 90, q->sort_metric, -1, SQLITE_STATIC);
	if (q->before)
		sqlite3_bind_int64(st, 91, q->before);
	if (q->cursor) {
		sqlite3_bind_int64(st, 92, cur.id);
		sqlite3_bind_double(st, 93, cur.v);
		if (q->sort_by == SORT_NAME)
			sqlite3_bind_text(st, 95, cur.name, -1, SQLITE_STATIC);
	}
	sqlite3_bind_int(st, 94, q->limit + 1);
	json_t *runs = json_array();
	int n = 0, step, more = 0;
	char next[2 * HR_MAX_NAME_LEN + 64] = "";
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == q->limit) {
			more = 1;
			break;
		}
		json_t *row = runs_row(st);
		int64_t id = sqlite3_column_int64(st, 0);
		if (vx) {
			int null = sqlite3_column_type(st, RUNS_ROW_NCOLS) == SQLITE_NULL;
			double v = sqlite3_column_double(st, RUNS_ROW_NCOLS);
			json_object_set_new(row, "sort_value", null ? json_null() : json_real(v));
			if (null) {
				snprintf(next, sizeof next, "n:%lld", (long long)id);
			} else {
				char num[32];
				fmt_double(num, v);
				snprintf(next, sizeof next, "v:%s:%lld", num, (long long)id);
			}
		} else if (q->sort_by == SORT_NAME) {
			const char *nm = (const char *)sqlite3_column_text(st, 1);
			size_t k = 0;
			next[k++] = 'a';
			next[k++] = ':';
			for (; nm && *nm && k + 2 < sizeof next - 24; nm++, k += 2)
				snprintf(next + k, 3, "%02x", (unsigned char)*nm);
			snprintf(next + k, sizeof next - k, ":%lld", (long long)id);
		} else {
			snprintf(next, sizeof next, "i:%lld", (long long)id);
		}
		json_array_append_new(runs, row);
		n++;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE) {
		json_decref(runs);
		sql_fail(db, err);
		goto out;
	}
	int64_t last = n ? json_integer_value(json_object_get(json_array_get(runs, (size_t)n - 1),
							       "id"))
			 : 0;
	*out = json_pack("{s:o, s:o, s:o}", "runs", runs, "next_before",
			 more && q->sort_by == SORT_ID && q->sort_desc ? json_integer(last)
								       : json_null(),
			 "next_cursor", more ? json_string(next) : json_null());
	rc = 0;
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	dynbuf_release(&b);
	return rc;
}

/* --- edits ------------------------------------------------------------------- */

struct patch_args {
	int64_t id;
	json_t *labels; /* merge patch, or NULL */
	int set_note;
	const char *note; /* NULL: remove */
	int pinned;       /* -1: unchanged */
	int rc;
	int too_many;
};

static int patch_job(struct store_tx *tx, void *arg, char *err)
{
	struct patch_args *a = arg;
	static const char q[] = "SELECT labels FROM runs WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	sqlite3_bind_int64(st, 1, a->id);
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		a->rc = -404;
		return 0;
	}
	if (step != SQLITE_ROW)
		return sql_fail(tx->db, err);
	json_t *labels = runs_col_json(st, 0);
	sqlite3_reset(st);
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	const char *k;
	json_t *v;
	json_object_foreach(a->labels, k, v)
	{
		if (json_is_null(v))
			json_object_del(labels, k);
		else
			json_object_set(labels, k, v);
	}
	if (json_object_size(labels) > HR_MAX_LABELS) {
		json_decref(labels);
		a->too_many = 1;
		return 0;
	}
	int rc = 0;
	if (a->labels) {
		static const char u[] = "UPDATE runs SET labels = ? WHERE id = ?";
		char *text = json_dumps(labels, JSON_COMPACT);
		st = store_tx_stmt(tx, u);
		sqlite3_bind_text(st, 1, text ? text : "{}", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, a->id);
		rc = sqlite3_step(st) == SQLITE_DONE ? put_labels(tx, a->id, labels, err)
						     : sql_fail(tx->db, err);
		free(text);
	}
	json_decref(labels);
	if (rc == 0 && a->set_note) {
		static const char u[] = "UPDATE runs SET note = ? WHERE id = ?";
		st = store_tx_stmt(tx, u);
		if (a->note)
			sqlite3_bind_text(st, 1, a->note, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, a->id);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = sql_fail(tx->db, err);
	}
	if (rc == 0 && a->pinned >= 0) {
		static const char u[] = "UPDATE runs SET pinned = ? WHERE id = ?";
		st = store_tx_stmt(tx, u);
		sqlite3_bind_int(st, 1, a->pinned);
		sqlite3_bind_int64(st, 2, a->id);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = sql_fail(tx->db, err);
	}
	a->rc = 0;
	return rc;
}

int history_patch(struct store *s, int64_t id, json_t *body, char *field, char *err)
{
	field[0] = '\0';
	if (!json_is_object(body))
		return -400 + 0 * errf(err, "the body must be a JSON object");
	struct patch_args a = {.id = id, .pinned = -1};
	const char *k;
	json_t *v;
	json_object_foreach(body, k, v)
	{
		if (strcmp(k, "labels") == 0) {
			if (!json_is_object(v)) {
				snprintf(field, 256, "labels");
				return -400 + 0 * errf(err, "'labels' must be an object of "
							    "label: text or null");
			}
			const char *lk;
			json_t *lv;
			json_object_foreach(v, lk, lv)
			{
				snprintf(field, 256, "labels.%.200s", lk);
				size_t kl = strlen(lk);
				if (kl == 0 || kl > HR_MAX_LABEL_LEN)
					return -400 + 0 * errf(err, "label keys must be 1 to %d bytes",
							       HR_MAX_LABEL_LEN);
				if (!json_is_null(lv) &&
				    (!json_is_string(lv) ||
				     json_string_length(lv) > HR_MAX_LABEL_LEN * 16 ||
				     strlen(json_string_value(lv)) != json_string_length(lv)))
					return -400 + 0 * errf(err, "'%s' must be text (at most %d "
								    "bytes) or null",
							       field, HR_MAX_LABEL_LEN * 16);
			}
			a.labels = v;
		} else if (strcmp(k, "note") == 0) {
			snprintf(field, 256, "note");
			if (!json_is_null(v) &&
			    (!json_is_string(v) || json_string_length(v) > HR_MAX_NOTE_LEN ||
			     strlen(json_string_value(v)) != json_string_length(v)))
				return -400 + 0 * errf(err, "'note' must be text of at most %d bytes, "
							    "or null",
						       HR_MAX_NOTE_LEN);
			a.set_note = 1;
			a.note = json_string_value(v);
		} else if (strcmp(k, "pinned") == 0) {
			snprintf(field, 256, "pinned");
			if (!json_is_boolean(v))
				return -400 + 0 * errf(err, "'pinned' must be true or false");
			a.pinned = json_is_true(v);
		} else {
			snprintf(field, 256, "%.200s", k);
			return -400 + 0 * errf(err, "unknown field '%s': labels, note and pinned "
						    "can be changed",
					       field);
		}
	}
	field[0] = '\0';
	if (store_exec(s, patch_job, &a, err) < 0)
		return -1;
	if (a.too_many) {
		snprintf(field, 256, "labels");
		return -400 + 0 * errf(err, "a run has at most %d labels", HR_MAX_LABELS);
	}
	return a.rc;
}

struct delete_args {
	int64_t id;
	int rc, done;
	char why[200];
};

/* One batch: checks the run may go, removes up to DELETE_BATCH records;
 * when none remain, the run itself (its other rows cascade). */
static int delete_job(struct store_tx *tx, void *arg, char *err)
{
	struct delete_args *a = arg;
	static const char q[] = "SELECT state FROM runs WHERE id = ?";
	static const char b[] = "SELECT name FROM baselines WHERE run_id = ?1 OR group_id = "
				"(SELECT group_id FROM runs WHERE id = ?1) LIMIT 1";
	static const char dr[] = "DELETE FROM runs WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	sqlite3_bind_int64(st, 1, a->id);
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		a->rc = -404;
		return 0;
	}
	if (step != SQLITE_ROW)
		return sql_fail(tx->db, err);
	if (strcmp((const char *)sqlite3_column_text(st, 0), RUN_RUNNING) == 0) {
		sqlite3_reset(st);
		snprintf(a->why, sizeof a->why, "run %lld is running: cancel it first",
			 (long long)a->id);
		a->rc = -409;
		return 0;
	}
	sqlite3_reset(st);
	st = store_tx_stmt(tx, b);
	sqlite3_bind_int64(st, 1, a->id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(a->why, sizeof a->why,
			 "run %lld is (part of) baseline '%.100s': delete or move the baseline first",
			 (long long)a->id, (const char *)sqlite3_column_text(st, 0));
		sqlite3_reset(st);
		a->rc = -409;
		return 0;
	}
	sqlite3_reset(st);
	/* records are WITHOUT ROWID: delete by key range, a batch at a time */
	static const char dk[] =
		"DELETE FROM records WHERE run_id = ?1 AND (worker, seq) IN (SELECT worker, seq "
		"FROM records WHERE run_id = ?1 LIMIT ?2)";
	st = store_tx_stmt(tx, dk);
	sqlite3_bind_int64(st, 1, a->id);
	sqlite3_bind_int(st, 2, DELETE_BATCH);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	if (sqlite3_changes(tx->db) > 0) {
		a->rc = 0;
		return 0; /* more to come: the next job goes on */
	}
	st = store_tx_stmt(tx, dr);
	sqlite3_bind_int64(st, 1, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	a->done = 1;
	a->rc = 0;
	return 0;
}

int history_delete(struct store *s, int64_t id, char *err)
{
	struct delete_args a = {.id = id};
	while (!a.done) {
		if (store_exec(s, delete_job, &a, err) < 0)
			return -1;
		if (a.rc < 0) {
			if (a.rc == -409)
				errf(err, "%s", a.why);
			return a.rc;
		}
	}
	return 0;
}

int history_retain(struct store *s, int days, int per_fp, char *err)
{
	if (days <= 0 && per_fp <= 0)
		return 0;
	static const char sql[] =
		"SELECT id FROM (SELECT id, pinned, state, created_at, group_id, row_number() OVER "
		"(PARTITION BY fingerprint ORDER BY id DESC) AS rn FROM runs) r "
		"WHERE pinned = 0 AND state NOT IN ('queued', 'running') "
		"AND ((?1 > 0 AND created_at < ?2) OR (?3 > 0 AND rn > ?3)) "
		"AND NOT EXISTS (SELECT 1 FROM baselines b WHERE b.run_id = r.id OR "
		"(r.group_id IS NOT NULL AND b.group_id = r.group_id)) ORDER BY id LIMIT 1000";
	int64_t ids[1000];
	int n = 0;
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		sqlite3_finalize(st);
		store_reader_put(s, db);
		return -1;
	}
	sqlite3_bind_int(st, 1, days);
	sqlite3_bind_int64(st, 2, now_ms() - (int64_t)days * 86400000LL);
	sqlite3_bind_int(st, 3, per_fp);
	while (n < 1000 && sqlite3_step(st) == SQLITE_ROW)
		ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	int removed = 0;
	for (int i = 0; i < n; i++) {
		int rc = history_delete(s, ids[i], err);
		if (rc == -1)
			return -1;
		removed += rc == 0;
	}
	return removed;
}

/* --- headline figures -------------------------------------------------------- */

struct index_args {
	int64_t id;
	json_t *summary;
};

static void bind_real(sqlite3_stmt *st, int col, json_t *v)
{
	if (json_is_number(v))
		sqlite3_bind_double(st, col, json_number_value(v));
	else
		sqlite3_bind_null(st, col);
}

static int index_job(struct store_tx *tx, void *arg, char *err)
{
	struct index_args *a = arg;
	static const char del[] = "DELETE FROM run_metrics WHERE run_id = ?";
	static const char ins[] =
		"INSERT INTO run_metrics (run_id, metric, unit, count, avg, min, max, std, p1, p5, "
		"p10, p25, p50, p75, p90, p95, p99, avg_lo, avg_hi, p1_lo, p1_hi, p5_lo, p5_hi, "
		"p10_lo, p10_hi, p25_lo, p25_hi, p50_lo, p50_hi, p75_lo, p75_hi, p90_lo, p90_hi, "
		"p95_lo, p95_hi, p99_lo, p99_hi) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
		"?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, "
		"?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37)";
	static const char upd[] = "UPDATE runs SET verdict = ?, valid = ?, gates_passed = ? "
				  "WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, del);
	sqlite3_bind_int64(st, 1, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	const char *tag;
	json_t *m;
	json_object_foreach(json_object_get(a->summary, "metrics"), tag, m)
	{
		if (!json_is_object(m))
			continue;
		st = store_tx_stmt(tx, ins);
		sqlite3_bind_int64(st, 1, a->id);
		sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
		const char *unit = json_string_value(json_object_get(m, "unit"));
		sqlite3_bind_text(st, 3, unit ? unit : "", -1, SQLITE_STATIC);
		json_t *cnt = json_object_get(m, "count");
		if (json_is_integer(cnt))
			sqlite3_bind_int64(st, 4, json_integer_value(cnt));
		for (int i = 0; i < METRIC_NSTATS; i++)
			bind_real(st, 5 + i, json_object_get(m, metric_stat_names[i]));
		json_t *ci = json_object_get(m, "ci");
		int col = 18;
		static const char *const cis[] = {"avg", "p1",  "p5",  "p10", "p25",
						  "p50", "p75", "p90", "p95", "p99"};
		for (size_t i = 0; i < HR_ARRAY_LEN(cis); i++, col += 2) {
			json_t *pair = json_object_get(ci, cis[i]);
			bind_real(st, col, json_array_get(pair, 0));
			bind_real(st, col + 1, json_array_get(pair, 1));
		}
		if (sqlite3_step(st) != SQLITE_DONE)
			return sql_fail(tx->db, err);
	}
	/* the error rate, a run-level figure of its own */
	json_t *counts = json_object_get(a->summary, "counts");
	long long req = json_integer_value(json_object_get(counts, "requests"));
	if (req > 0) {
		st = store_tx_stmt(tx, ins);
		sqlite3_bind_int64(st, 1, a->id);
		sqlite3_bind_text(st, 2, "error_rate", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, "fraction", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, req);
		sqlite3_bind_double(st, 5,
				    (double)json_integer_value(json_object_get(counts, "errors")) /
					    (double)req);
		if (sqlite3_step(st) != SQLITE_DONE)
			return sql_fail(tx->db, err);
	}
	st = store_tx_stmt(tx, upd);
	const char *verdict =
		json_string_value(json_object_get(json_object_get(a->summary, "client"), "verdict"));
	if (verdict)
		sqlite3_bind_text(st, 1, verdict, -1, SQLITE_STATIC);
	json_t *valid = json_object_get(json_object_get(a->summary, "validity"), "valid");
	if (json_is_boolean(valid))
		sqlite3_bind_int(st, 2, json_is_true(valid));
	json_t *gp = json_object_get(json_object_get(a->summary, "gates"), "passed");
	if (json_is_boolean(gp))
		sqlite3_bind_int(st, 3, json_is_true(gp));
	sqlite3_bind_int64(st, 4, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	return 0;
}

int history_index_summary(struct store *s, int64_t id, json_t *summary, char *err)
{
	if (!summary)
		return 0;
	struct index_args a = {.id = id, .summary = summary};
	return store_exec(s, index_job, &a, err);
}

/* --- groups ------------------------------------------------------------------ */

int history_group_runs(struct store *s, int64_t group, int64_t *ids, int max, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int n = -1;
	if (sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE group_id = ? ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, group);
	n = 0;
	while (sqlite3_step(st) == SQLITE_ROW && n < max)
		ids[n++] = sqlite3_column_int64(st, 0);
	if (n == 0) {
		/* a group whose runs were all deleted still exists */
		sqlite3_finalize(st);
		st = NULL;
		sqlite3_prepare_v2(db, "SELECT 1 FROM run_groups WHERE id = ?", -1, &st, NULL);
		sqlite3_bind_int64(st, 1, group);
		if (sqlite3_step(st) != SQLITE_ROW)
			n = -404;
	}
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return n;
}

/* Mean, spread and t interval of xs (n >= 1) as {"mean", "std", "min",
 * "max", "n", "ci"}. */
static json_t *spread_json(const double *xs, size_t n, double conf)
{
	struct infer_moments mo;
	infer_moments_of(xs, n, &mo);
	double lo = xs[0], hi = xs[0];
	for (size_t i = 1; i < n; i++) {
		lo = xs[i] < lo ? xs[i] : lo;
		hi = xs[i] > hi ? xs[i] : hi;
	}
	struct infer_ci ci;
	int ok = n >= 2 && infer_t_mean(&mo, conf, &ci) == 0 && ci.ok;
	return json_pack("{s:f, s:o, s:f, s:f, s:I, s:o}", "mean", mo.mean, "std",
			 n >= 2 ? json_real(sqrt(mo.var)) : json_null(), "min", lo, "max", hi, "n",
			 (json_int_t)n, "ci",
			 ok ? json_pack("[f, f]", ci.lo, ci.hi) : json_null());
}

int history_group(struct store *s, int64_t id, double conf, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	json_t *g = NULL;
	if (sqlite3_prepare_v2(db, "SELECT id, name, count, cooldown_s, created_at FROM run_groups "
				   "WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = -404;
		goto out;
	}
	g = json_pack("{s:I, s:o, s:i, s:f, s:o}", "id", (json_int_t)id, "name", runs_col_text(st, 1),
		      "count", sqlite3_column_int(st, 2), "cooldown_s", sqlite3_column_double(st, 3),
		      "created_at", runs_col_time(st, 4));
	sqlite3_finalize(st);
	st = NULL;
	sqlite3_prepare_v2(db, "SELECT id, state FROM runs WHERE group_id = ? ORDER BY id", -1, &st,
			   NULL);
	sqlite3_bind_int64(st, 1, id);
	json_t *runs = json_array();
	int active = 0, finished = 0, succeeded = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *state = (const char *)sqlite3_column_text(st, 1);
		json_array_append_new(runs, json_pack("{s:I, s:s}", "id",
						       (json_int_t)sqlite3_column_int64(st, 0),
						       "state", state ? state : "?"));
		if (state && run_state_is_terminal(state))
			finished++;
		else
			active += state && strcmp(state, RUN_RUNNING) == 0;
		succeeded += state && strcmp(state, RUN_SUCCEEDED) == 0;
	}
	sqlite3_finalize(st);
	st = NULL;
	json_object_set_new(g, "runs", runs);
	json_object_set_new(g, "state",
			    json_string(finished == (int)json_array_size(runs)
						? "finished"
						: active || finished ? "running" : "queued"));
	/* the spread across the succeeded repeats, per metric and statistic */
	char sql[1024];
	int off = snprintf(sql, sizeof sql, "SELECT m.metric, m.unit");
	for (int i = 0; i < METRIC_NSTATS; i++)
		off += snprintf(sql + off, sizeof sql - (size_t)off, ", m.%s", metric_stat_names[i]);
	snprintf(sql + off, sizeof sql - (size_t)off,
		 " FROM run_metrics m JOIN runs r ON r.id = m.run_id WHERE r.group_id = ? AND "
		 "r.state = 'succeeded' ORDER BY m.metric, r.id");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	json_t *metrics = json_object();
	struct dvec col[METRIC_NSTATS];
	for (int i = 0; i < METRIC_NSTATS; i++)
		dvec_init(&col[i]);
	char cur[128] = "", unit[64] = "";
	int step;
	for (;;) {
		step = sqlite3_step(st);
		const char *mt = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
		if (cur[0] && (!mt || strcmp(mt, cur) != 0)) {
			json_t *o = json_pack("{s:s}", "unit", unit);
			const struct metric_info *mi = metric_info(cur);
			for (int i = 0; i < METRIC_NSTATS; i++) {
				if (col[i].n)
					json_object_set_new(o, mi && mi->run_level && i == 0
								       ? "value"
								       : metric_stat_names[i],
							    spread_json(col[i].v, col[i].n, conf));
				col[i].n = 0;
			}
			json_object_set_new(metrics, cur, o);
		}
		if (!mt)
			break;
		snprintf(cur, sizeof cur, "%s", mt);
		const char *u = (const char *)sqlite3_column_text(st, 1);
		snprintf(unit, sizeof unit, "%s", u ? u : "");
		for (int i = 0; i < METRIC_NSTATS; i++)
			if (sqlite3_column_type(st, 2 + i) != SQLITE_NULL)
				dvec_push(&col[i], sqlite3_column_double(st, 2 + i));
	}
	for (int i = 0; i < METRIC_NSTATS; i++)
		dvec_release(&col[i]);
	json_object_set_new(g, "summary",
			    json_pack("{s:i, s:f, s:o}", "repeats", succeeded, "confidence", conf,
				      "metrics", metrics));
	*out = g;
	g = NULL;
	rc = 0;
out:
	json_decref(g);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

/* --- baselines --------------------------------------------------------------- */

struct bl_put {
	const char *name;
	const char *kind;
	int64_t run, group;
	char *rule;
	int created, missing;
};

static int bl_put_job(struct store_tx *tx, void *arg, char *err)
{
	struct bl_put *a = arg;
	static const char chk_run[] = "SELECT 1 FROM runs WHERE id = ?";
	static const char chk_grp[] = "SELECT 1 FROM run_groups WHERE id = ?";
	static const char have[] = "SELECT 1 FROM baselines WHERE name = ?";
	static const char up[] =
		"INSERT INTO baselines (name, kind, run_id, group_id, rule, created_at, updated_at) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (name) DO UPDATE SET kind = ?2, "
		"run_id = ?3, group_id = ?4, rule = ?5, updated_at = ?6";
	if (a->run || a->group) {
		sqlite3_stmt *st = store_tx_stmt(tx, a->run ? chk_run : chk_grp);
		sqlite3_bind_int64(st, 1, a->run ? a->run : a->group);
		int found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_reset(st);
		if (!found) {
			a->missing = 1;
			return 0;
		}
	}
	sqlite3_stmt *st = store_tx_stmt(tx, have);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	a->created = sqlite3_step(st) != SQLITE_ROW;
	sqlite3_reset(st);
	st = store_tx_stmt(tx, up);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->kind, -1, SQLITE_STATIC);
	if (a->run)
		sqlite3_bind_int64(st, 3, a->run);
	if (a->group)
		sqlite3_bind_int64(st, 4, a->group);
	if (a->rule)
		sqlite3_bind_text(st, 5, a->rule, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now_ms());
	return sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(tx->db, err);
}

/* Validates a rule {labels{}, fingerprint, valid_only} in place. */
static int check_rule(json_t *rule, char *field, char *err)
{
	if (!json_is_object(rule)) {
		snprintf(field, 256, "rule");
		return errf(err, "'rule' must be an object: {labels, fingerprint, valid_only}");
	}
	const char *k;
	json_t *v;
	json_object_foreach(rule, k, v)
	{
		snprintf(field, 256, "rule.%.100s", k);
		if (strcmp(k, "labels") == 0) {
			if (!json_is_object(v) || json_object_size(v) > HISTORY_MAX_SELECTORS)
				return errf(err, "'rule.labels' must be an object of at most %d "
						 "label: text pairs",
					    HISTORY_MAX_SELECTORS);
			const char *lk;
			json_t *lv;
			json_object_foreach(v, lk, lv)
			{
				if (!json_is_string(lv) || !*lk || strlen(lk) > HR_MAX_LABEL_LEN) {
					snprintf(field, 256, "rule.labels.%.100s", lk);
					return errf(err, "'%s' must be text", field);
				}
			}
		} else if (strcmp(k, "fingerprint") == 0) {
			if (!json_is_string(v) || json_string_length(v) != HISTORY_FP_LEN)
				return errf(err, "'rule.fingerprint' must be %d hex digits",
					    HISTORY_FP_LEN);
		} else if (strcmp(k, "valid_only") == 0) {
			if (!json_is_boolean(v))
				return errf(err, "'rule.valid_only' must be true or false");
		} else {
			return errf(err, "unknown field '%s': labels, fingerprint, valid_only",
				    field);
		}
	}
	if (!json_object_get(rule, "valid_only"))
		json_object_set_new(rule, "valid_only", json_true());
	field[0] = '\0';
	return 0;
}

int history_baseline_put(struct store *s, const char *name, json_t *body, int *created,
			 char *field, char *err)
{
	field[0] = '\0';
	if (!json_is_object(body) || json_object_size(body) != 1)
		return -400 + 0 * errf(err, "the body must be one of {\"run\": ID}, {\"group\": ID} "
					    "or {\"rule\": {...}}");
	struct bl_put a = {.name = name};
	json_t *v;
	if ((v = json_object_get(body, "run"))) {
		snprintf(field, 256, "run");
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return -400 + 0 * errf(err, "'run' must be a run id");
		a.kind = "run";
		a.run = (int64_t)json_integer_value(v);
	} else if ((v = json_object_get(body, "group"))) {
		snprintf(field, 256, "group");
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return -400 + 0 * errf(err, "'group' must be a group id");
		a.kind = "group";
		a.group = (int64_t)json_integer_value(v);
	} else if ((v = json_object_get(body, "rule"))) {
		if (check_rule(v, field, err) < 0)
			return -400;
		a.kind = "rule";
		a.rule = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	} else {
		return -400 + 0 * errf(err, "the body must be one of {\"run\": ID}, {\"group\": ID} "
					    "or {\"rule\": {...}}");
	}
	int rc = store_exec(s, bl_put_job, &a, err);
	free(a.rule);
	if (rc < 0)
		return -1;
	if (a.missing)
		return -404 + 0 * errf(err, "no %s %lld", a.run ? "run" : "group",
				       (long long)(a.run ? a.run : a.group));
	*created = a.created;
	field[0] = '\0';
	return 0;
}

/* The latest run a rule matches, created before before_id (0: any). */
static int64_t rule_run(sqlite3 *db, json_t *rule, int64_t before_id)
{
	struct dynbuf b;
	dynbuf_init(&b, 16 * 1024);
	dynbuf_addstr(&b, "SELECT r.id FROM runs r WHERE r.state = 'succeeded' AND r.id < ?1");
	if (json_is_true(json_object_get(rule, "valid_only")))
		dynbuf_addstr(&b, " AND coalesce(r.valid, 1) = 1 AND coalesce(r.verdict, '') != "
				  "'client_bound'");
	if (json_object_get(rule, "fingerprint"))
		dynbuf_addstr(&b, " AND r.fingerprint = ?2");
	json_t *labels = json_object_get(rule, "labels");
	const char *k;
	json_t *v;
	int i = 0;
	json_object_foreach(labels, k, v)
	{
		dynbuf_printf(&b, " AND r.id IN (SELECT run_id FROM run_labels WHERE key = ?%d AND "
				  "value = ?%d)", 10 + 2 * i, 11 + 2 * i);
		i++;
	}
	dynbuf_addstr(&b, " ORDER BY r.id DESC LIMIT 1");
	sqlite3_stmt *st = NULL;
	int64_t id = 0;
	if (b.data && sqlite3_prepare_v2(db, b.data, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, before_id > 0 ? before_id : INT64_MAX);
		const char *fp = json_string_value(json_object_get(rule, "fingerprint"));
		if (fp)
			sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
		i = 0;
		json_object_foreach(labels, k, v)
		{
			sqlite3_bind_text(st, 10 + 2 * i, k, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 11 + 2 * i, json_string_value(v), -1, SQLITE_STATIC);
			i++;
		}
		if (sqlite3_step(st) == SQLITE_ROW)
			id = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	dynbuf_release(&b);
	return id;
}

/* Reads baseline `name`: its JSON and the runs it stands for now. */
static int baseline_read(sqlite3 *db, const char *name, int64_t before_id, json_t **out,
			 int64_t *ids, int max, int *n, char *err)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT name, kind, run_id, group_id, rule, created_at, "
				   "updated_at FROM baselines WHERE name = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW) {
		rc = step == SQLITE_DONE ? -404 : sql_fail(db, err);
		goto out;
	}
	const char *kind = (const char *)sqlite3_column_text(st, 1);
	json_t *rule = runs_col_json(st, 4);
	json_t *res = json_array();
	if (strcmp(kind, "run") == 0) {
		ids[(*n)++] = sqlite3_column_int64(st, 2);
	} else if (strcmp(kind, "group") == 0) {
		sqlite3_stmt *g = NULL;
		sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE group_id = ? AND state = "
				       "'succeeded' ORDER BY id",
				   -1, &g, NULL);
		sqlite3_bind_int64(g, 1, sqlite3_column_int64(st, 3));
		while (*n < max && sqlite3_step(g) == SQLITE_ROW)
			ids[(*n)++] = sqlite3_column_int64(g, 0);
		sqlite3_finalize(g);
	} else {
		int64_t id = rule_run(db, rule, before_id);
		if (id)
			ids[(*n)++] = id;
	}
	for (int i = 0; i < *n; i++)
		json_array_append_new(res, json_integer(ids[i]));
	if (out)
		*out = json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "name", runs_col_text(st, 0),
				 "kind", kind, "run", runs_col_int(st, 2), "group",
				 runs_col_int(st, 3), "rule", rule, "created_at",
				 runs_col_time(st, 5), "updated_at", runs_col_time(st, 6), "resolves_to", res);
	else {
		json_decref(rule);
		json_decref(res);
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int history_baseline_get(struct store *s, const char *name, json_t **out, char *err)
{
	int64_t ids[HR_MAX_REPEAT];
	int n;
	sqlite3 *db = store_reader(s);
	int rc = baseline_read(db, name, 0, out, ids, HR_MAX_REPEAT, &n, err);
	store_reader_put(s, db);
	return rc;
}

int history_baseline_runs(struct store *s, const char *name, int64_t before_id, int64_t *ids,
			  int max, char *err)
{
	int n;
	sqlite3 *db = store_reader(s);
	int rc = baseline_read(db, name, before_id, NULL, ids, max, &n, err);
	store_reader_put(s, db);
	return rc < 0 ? rc : n;
}

int history_baseline_list(struct store *s, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	json_t *all = json_array();
	if (sqlite3_prepare_v2(db, "SELECT name FROM baselines ORDER BY name", -1, &st, NULL) !=
	    SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		char name[HR_MAX_LABEL_LEN + 1];
		snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, 0));
		json_t *b = NULL;
		int64_t ids[HR_MAX_REPEAT];
		int n;
		if (baseline_read(db, name, 0, &b, ids, HR_MAX_REPEAT, &n, err) < 0)
			goto out;
		json_array_append_new(all, b);
	}
	*out = json_pack("{s:O}", "baselines", all);
	rc = 0;
out:
	json_decref(all);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

struct bl_del {
	const char *name;
	int found;
};

static int bl_del_job(struct store_tx *tx, void *arg, char *err)
{
	struct bl_del *a = arg;
	static const char sql[] = "DELETE FROM baselines WHERE name = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_fail(tx->db, err);
	a->found = sqlite3_changes(tx->db) > 0;
	return 0;
}

int history_baseline_delete(struct store *s, const char *name, char *err)
{
	struct bl_del a = {.name = name};
	if (store_exec(s, bl_del_job, &a, err) < 0)
		return -1;
	return a.found ? 0 : -404;
}

/* --- series ------------------------------------------------------------------ */

struct point {
	char *key; /* the run id, or the group_by label's value */
	int64_t time_ms;
	int64_t *runs; /* newest first, as read */
	size_t nruns, cap;
	struct dvec vals;
	double lo, hi; /* the run's own interval when the point is one run */
	int have_ci;
};

/* Appends ",\"NAME\":" and v as the shortest number that reads back
 * (null when not finite). */
static void put_num(struct dynbuf *b, const char *name, double v)
{
	char num[32];
	if (name)
		dynbuf_printf(b, ",\"%s\":", name);
	if (isfinite(v)) {
		fmt_double(num, v);
		dynbuf_addstr(b, num);
	} else {
		dynbuf_addstr(b, "null");
	}
}

/* One point as JSON text (the answer of a long series is written, not
 * built as a jansson tree: that tree cost most of a 10,000-point answer).
 * *value: the point's value for the lookback rule. */
static void put_point(struct dynbuf *b, struct point *p, const struct series_opts *o,
		      double *value)
{
	struct infer_moments mo;
	infer_moments_of(p->vals.v, p->vals.n, &mo);
	*value = mo.mean;
	dynbuf_addstr(b, "{\"key\":\"");
	json_escape_append(b, p->key, strlen(p->key));
	dynbuf_addstr(b, "\",\"runs\":[");
	for (size_t i = p->nruns; i-- > 0;) /* oldest first */
		dynbuf_printf(b, "%s%lld", i + 1 < p->nruns ? "," : "", (long long)p->runs[i]);
	char t[32];
	fmt_time_ms(t, p->time_ms);
	dynbuf_printf(b, "],\"time\":\"%s\"", t);
	put_num(b, "value", mo.mean);
	struct infer_ci c;
	int ok = 0;
	if (p->vals.n >= 2 && infer_t_mean(&mo, o->conf, &c) == 0 && c.ok)
		ok = 1;
	else if (p->vals.n == 1 && p->have_ci)
		ok = 1, c.lo = p->lo, c.hi = p->hi;
	if (ok) {
		dynbuf_addstr(b, ",\"ci\":[");
		put_num(b, NULL, c.lo);
		dynbuf_addstr(b, ",");
		put_num(b, NULL, c.hi);
		dynbuf_addstr(b, "]");
	} else {
		dynbuf_addstr(b, ",\"ci\":null");
	}
	dynbuf_printf(b, ",\"n_runs\":%zu", p->vals.n);
}

int history_series(struct store *s, const struct run_query *q, const struct series_opts *o,
		   char **out, size_t *out_len, char *err)
{
	const char *stat = metric_stat_names[o->stat];
	const struct metric_info *mi = metric_info(o->metric);
	struct dynbuf b;
	dynbuf_init(&b, 64 * 1024);
	int has_ci = o->stat == 0 || o->stat >= 4;
	dynbuf_printf(&b, "SELECT r.id, r.created_at, m.%s, %s%s%s, %s%s%s", stat,
		      has_ci ? "m." : "", has_ci ? stat : "NULL", has_ci ? "_lo" : "",
		      has_ci ? "m." : "", has_ci ? stat : "NULL", has_ci ? "_hi" : "");
	if (o->group_by)
		dynbuf_addstr(&b, ", gl.value");
	dynbuf_addstr(&b, " FROM runs r JOIN run_metrics m ON m.run_id = r.id AND m.metric = ?90");
	if (o->group_by)
		dynbuf_addstr(&b, " JOIN run_labels gl ON gl.run_id = r.id AND gl.key = ?91");
	dynbuf_addstr(&b, " WHERE r.state = 'succeeded'");
	where_clause(q, &b);
	dynbuf_printf(&b, " AND m.%s IS NOT NULL ORDER BY r.id DESC LIMIT ?92", stat);
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	struct point *pts = NULL;
	size_t np = 0, cap = 0;
	json_t *by_key = json_object();
	if (!b.data || sqlite3_prepare_v2(db, b.data, -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err);
		goto out;
	}
	bind_query(st, q);
	sqlite3_bind_text(st, 90, o->metric, -1, SQLITE_STATIC);
	if (o->group_by)
		sqlite3_bind_text(st, 91, o->group_by, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 92, q->limit);
	/* newest first from SQL (the limit keeps the latest); points are built
	 * in that order and reversed at the end */
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		char key[HR_MAX_LABEL_LEN * 16 + 1];
		if (o->group_by)
			snprintf(key, sizeof key, "%s", (const char *)sqlite3_column_text(st, 5));
		else
			snprintf(key, sizeof key, "%lld", (long long)id);
		struct point *p = NULL;
		if (o->group_by) {
			/* the point of this label value: key -> index in pts */
			json_t *at = json_object_get(by_key, key);
			if (at)
				p = &pts[json_integer_value(at)];
		}
		if (!p) {
			if (np == cap) {
				cap = cap ? cap * 2 : 256;
				pts = xrealloc(pts, cap * sizeof *pts);
			}
			if (o->group_by)
				json_object_set_new_nocheck(by_key, key, json_integer((json_int_t)np));
			p = &pts[np++];
			memset(p, 0, sizeof *p);
			p->key = xstrdup(key);
			dvec_init(&p->vals);
			p->time_ms = sqlite3_column_int64(st, 1);
			p->have_ci = sqlite3_column_type(st, 3) != SQLITE_NULL &&
				     sqlite3_column_type(st, 4) != SQLITE_NULL;
			p->lo = sqlite3_column_double(st, 3);
			p->hi = sqlite3_column_double(st, 4);
		}
		if (p->nruns == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 4;
			p->runs = xrealloc(p->runs, p->cap * sizeof *p->runs);
		}
		p->runs[p->nruns++] = id; /* newest first: put_point reverses */
		dvec_push(&p->vals, sqlite3_column_double(st, 2));
	}
	/* at most q->limit points (SERIES_MAX_POINTS), each a label value of
	 * bounded length and numbers: well under the bound */
	struct dynbuf ans;
	dynbuf_init(&ans, HR_MAX_SERIES_ANSWER);
	const char *dirs[] = {"lower", "none", "higher"};
	dynbuf_printf(&ans, "{\"metric\":\"%s\",\"stat\":\"%s\",\"unit\":\"%s\",\"direction\":\"%s\","
			    "\"group_by\":",
		      o->metric, mi && mi->run_level ? "value" : stat, mi ? mi->unit : "",
		      dirs[(mi ? mi->direction : 0) + 1]);
	if (o->group_by) {
		dynbuf_addstr(&ans, "\"label.");
		json_escape_append(&ans, o->group_by, strlen(o->group_by));
		dynbuf_addstr(&ans, "\"");
	} else {
		dynbuf_addstr(&ans, "null");
	}
	dynbuf_printf(&ans, ",\"rule\":{\"lookback\":%d", o->lookback);
	put_num(&ans, "z", o->z);
	put_num(&ans, "noise_pct", o->noise_pct);
	dynbuf_addstr(&ans, "},\"points\":[");
	double *vals = np ? xmalloc(np * sizeof *vals) : NULL;
	for (size_t k = 0; k < np; k++) {
		if (k)
			dynbuf_addstr(&ans, ",");
		put_point(&ans, &pts[np - 1 - k], o, &vals[k]);
		/* the lookback rule: z of this point against the previous ones */
		const char *shift = NULL;
		double z = NAN;
		size_t lb = (size_t)o->lookback;
		if (k >= 2) {
			size_t from = k > lb ? k - lb : 0;
			struct infer_moments mo;
			infer_moments_of(vals + from, k - from, &mo);
			double sd = sqrt(mo.var);
			double rel = mo.mean != 0 ? (vals[k] - mo.mean) / fabs(mo.mean) * 100 : 0;
			if (sd > 0) {
				z = (vals[k] - mo.mean) / sd;
				if (fabs(z) > o->z && fabs(rel) > o->noise_pct) {
					int up = vals[k] > mo.mean;
					int dir = mi ? mi->direction : 0;
					shift = dir == 0 ? "changed" : (up == (dir > 0)) ? "better" : "worse";
				}
			}
		}
		if (shift)
			dynbuf_printf(&ans, ",\"shift\":\"%s\"", shift);
		else
			dynbuf_addstr(&ans, ",\"shift\":null");
		put_num(&ans, "z", z);
		dynbuf_addstr(&ans, "}");
	}
	free(vals);
	dynbuf_addstr(&ans, "]}");
	*out = dynbuf_take(&ans, out_len);
	rc = 0;
out:
	for (size_t i = 0; i < np; i++) {
		free(pts[i].key);
		free(pts[i].runs);
		dvec_release(&pts[i].vals);
	}
	free(pts);
	json_decref(by_key);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	dynbuf_release(&b);
	return rc;
}
