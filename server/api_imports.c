/* api_imports.c - POST /api/v1/imports: a vLLM or AIPerf result file, or
 * a GuideLLM report (one run per benchmark), stored as read-only imported
 * runs (server/import.c reads it; this file
 * keeps the original by content hash, inserts the run, its records through
 * the normal record path and its summary; docs/formats.md, "Imports"). */
#include "apiint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "history.h"
#include "import.h"
#include "imports.h"
#include "runs.h"
#include "spec.h"
#include "summary.h"
#include "util.h"

/* --- the run's origin ------------------------------------------------------------------ */

void imports_attach(sqlite3 *db, int64_t id, json_t *run)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT producer, version, format, sha256, bytes, jsonl_sha256, "
			       "jsonl_bytes, records, layout, stated, unmapped, imported_at "
			       "FROM run_imports WHERE run_id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		long long records = sqlite3_column_int64(st, 7);
		json_t *o = json_pack(
		    "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:b, s:s, s:o, s:o, s:o}", "producer",
		    runs_col_text(st, 0), "version", runs_col_text(st, 1), "format",
		    runs_col_text(st, 2), "sha256", runs_col_text(st, 3), "bytes",
		    runs_col_int(st, 4), "jsonl_sha256", runs_col_text(st, 5), "jsonl_bytes",
		    runs_col_int(st, 6), "records", (json_int_t)records, "summary_only",
		    records == 0, "start_times",
		    records == 0 ? "none" : sqlite3_column_int(st, 8) ? "laid_out" : "file",
		    "stated", runs_col_json(st, 9), "unmapped", runs_col_json(st, 10), "imported_at",
		    runs_col_time(st, 11));
		if (o)
			json_object_set_new(run, "import", o);
	}
	sqlite3_finalize(st);
}

int imports_summary_only(json_t *run)
{
	return json_is_true(json_object_get(json_object_get(run, "import"), "summary_only"));
}

/* --- the original file, kept by content ---------------------------------------------- */

static void sha256_hex(const char *p, size_t n, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* DATA/imports/<sha>: written to a temporary name, synced, renamed. */
static int keep_file(struct store *s, const char *p, size_t n, const char *sha, char *err)
{
	const char *db = store_path(s);
	const char *slash = strrchr(db, '/');
	char *dir = slash ? xasprintf("%.*s/imports", (int)(slash - db), db) : xstrdup("imports");
	char *final = xasprintf("%s/%s", dir, sha);
	char *tmp = xasprintf("%s/.tmp-%s-%d", dir, sha, (int)getpid());
	struct stat sb;
	int rc = 0, fd = -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		rc = errf(err, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	if (stat(final, &sb) == 0 && S_ISREG(sb.st_mode) && (size_t)sb.st_size == n)
		goto out; /* the same bytes are kept already */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = errf(err, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = errf(err, "cannot write %s: %s", tmp, strerror(w < 0 ? errno : EIO));
			break;
		}
		off += (size_t)w;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = errf(err, "cannot sync %s: %s", tmp, strerror(errno));
	close(fd);
	if (rc == 0 && rename(tmp, final) < 0)
		rc = errf(err, "cannot rename %s: %s", tmp, strerror(errno));
	if (rc < 0)
		unlink(tmp);
	if (rc == 0) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
out:
	free(dir);
	free(final);
	free(tmp);
	return rc;
}

/* --- the run ------------------------------------------------------------------------- */

struct insert_args {
	json_t *spec; /* normalised */
	const struct import_result *res;
	const char *who;
	const char *sha, *jsha;
	size_t bytes, jbytes;
	int64_t id;
};

static int insert_job(struct store_tx *tx, void *arg, char *err)
{
	struct insert_args *a = arg;
	int64_t id = history_tx_next_run_id(tx, err);
	if (id < 0)
		return -1;
	int64_t now = wall_ns() / 1000000;
	/* 'running' while its records and summary go in: a crash meanwhile
	 * leaves it interrupted, as any run */
	sqlite3_stmt *st = store_tx_stmt(
	    tx, "INSERT INTO runs (id, name, state, spec, labels, created_at, started_at, "
		"t0_wall_ns, submitted_by) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?)");
	char *spec = json_dumps(a->spec, JSON_COMPACT);
	char *labels = json_dumps(json_object_get(a->spec, "labels"), JSON_COMPACT);
	const char *name = json_string_value(json_object_get(a->spec, "name"));
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, name ? name : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, spec, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, labels ? labels : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, now);
	sqlite3_bind_int64(st, 6, now);
	if (a->res->t0_wall_ns > 0)
		sqlite3_bind_int64(st, 7, a->res->t0_wall_ns);
	if (a->who && a->who[0])
		sqlite3_bind_text(st, 8, a->who, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	free(spec);
	free(labels);
	if (rc != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	if (history_tx_index_run(tx, id, a->spec, err) < 0)
		return -1;
	st = store_tx_stmt(tx, "INSERT INTO run_imports (run_id, producer, version, format, "
			       "sha256, bytes, jsonl_sha256, jsonl_bytes, records, layout, stated, "
			       "unmapped, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
	char *stated = json_dumps(a->res->stated, JSON_COMPACT | JSON_REAL_PRECISION(17));
	char *unmapped = json_dumps(a->res->unmapped, JSON_COMPACT | JSON_REAL_PRECISION(17));
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, a->res->producer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->res->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, a->res->format, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, a->sha, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)a->bytes);
	if (a->jsha) {
		sqlite3_bind_text(st, 7, a->jsha, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 8, (sqlite3_int64)a->jbytes);
	}
	sqlite3_bind_int64(st, 9, (sqlite3_int64)a->res->n);
	sqlite3_bind_int(st, 10, a->res->layout);
	sqlite3_bind_text(st, 11, stated ? stated : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 12, unmapped ? unmapped : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 13, now);
	rc = sqlite3_step(st);
	free(stated);
	free(unmapped);
	if (rc != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	a->id = id;
	return 0;
}

/* The figures the file states replace the recomputed ones (start times
 * laid out by headroom are not the file's). */
static void apply_figures(json_t *summary, json_t *figures)
{
	const char *key;
	json_t *v;
	json_t *metrics = json_object_get(summary, "metrics");
	json_object_foreach(figures, key, v)
	{
		if (strcmp(key, "window_s") == 0) {
			json_object_set(summary, "window_s", v);
			continue;
		}
		const char *unit = strcmp(key, "request_throughput") == 0 ||
					   strcmp(key, "goodput") == 0
				       ? "requests/sec"
				       : "tokens/sec";
		if (json_is_object(metrics))
			json_object_set_new(metrics, key,
					    json_pack("{s:s, s:O}", "unit", unit, "avg", v));
	}
}

/* Moves the records into the store in batches (ownership passes). */
static void add_records(struct store *s, int64_t id, struct import_result *res)
{
	for (size_t i = 0; i < res->n; i += HR_MAX_RECORDS_PER_BATCH) {
		size_t m = res->n - i < HR_MAX_RECORDS_PER_BATCH ? res->n - i
								 : HR_MAX_RECORDS_PER_BATCH;
		struct hr_record *b = xmalloc(m * sizeof *b);
		memcpy(b, res->recs + i, m * sizeof *b);
		memset(res->recs + i, 0, m * sizeof *b); /* moved: nothing left to free */
		runs_add_records(s, id, b, m);
	}
}

/* One parsed result stored as an imported run: the run row and its origin,
 * its records, its summary, its index rows. -1 with err (the run removed)
 * when the store fails. */
static int store_one(struct call *k, struct import_result *res, struct spec *sp,
		     const char *sha, const char *jsha, size_t flen, size_t jlen, int64_t *id,
		     char *err)
{
	struct insert_args a = {.spec = sp->json, .res = res, .who = k->auth ? k->auth->who : NULL,
				.sha = sha, .jsha = jsha,
				.bytes = flen, .jbytes = jlen};
	if (store_exec(k->a->store, insert_job, &a, err) < 0)
		return -1;
	json_t *summary = NULL;
	long long valid = 0;
	int failed = 0;
	if (res->n) {
		size_t n = res->n;
		add_records(k->a->store, a.id, res);
		if (runs_sync(k->a->store) < 0 || runs_count_records(k->a->store, a.id) != (long long)n) {
			snprintf(err, HR_ERRLEN, "the store could not write the imported records");
			failed = 1;
		} else {
			summary = summary_compute(k->a->store, a.id, sp, res->t0_wall_ns, &valid, err);
			failed = !summary;
		}
		if (summary)
			apply_figures(summary, res->figures);
	} else {
		/* summary only: the file's figures over the shape of a summary
		 * (its load and telemetry sections, from no records) */
		summary = summary_compute(k->a->store, a.id, sp, 0, NULL, err);
		failed = !summary;
		const char *key;
		json_t *v;
		json_object_foreach(res->summary, key, v)
		{
			if (summary && strcmp(key, "metrics") == 0)
				json_object_update(json_object_get(summary, "metrics"), v);
			else if (summary)
				json_object_set(summary, key, v);
		}
		valid = json_integer_value(json_object_get(json_object_get(res->summary, "counts"),
							   "valid"));
		if (summary)
			apply_figures(summary, res->figures);
	}
	char reason[200] = "";
	if (!failed && valid == 0)
		snprintf(reason, sizeof reason, "no request of the imported file succeeded");
	if (failed || runs_finish(k->a->store, a.id, reason[0] ? RUN_FAILED : RUN_SUCCEEDED,
				  reason[0] ? reason : NULL, summary, err) < 0 ||
	    history_index_summary(k->a->store, a.id, summary, err) < 0) {
		/* nothing half-imported stays: ended first (a running run is
		 * not deleted), then removed */
		char e2[HR_ERRLEN];
		if (runs_finish(k->a->store, a.id, RUN_FAILED, "the import failed", NULL, e2) == 0)
			history_delete(k->a->store, a.id, e2);
		json_decref(summary);
		return -1;
	}
	json_decref(summary);
	*id = a.id;
	return 0;
}

/* --- the request ------------------------------------------------------------------------ */

/* A file refused: 400 invalid_import naming the field and the line (null
 * when not about one line of the JSONL file); a bad format parameter is
 * 400 invalid_value. */
static enum MHD_Result import_refused(struct call *k, const struct import_error *e)
{
	if (strcmp(e->field, "format") == 0)
		return reply_error(k->conn, 400, "invalid_value", "format", "%s", e->message);
	json_t *o = json_pack("{s:s, s:s, s:s, s:o}", "code", "invalid_import", "message",
			      e->message, "field", e->field, "line",
			      e->line > 0 ? json_integer(e->line) : json_null());
	return reply_json(k->conn, 400, json_pack("{s:o}", "error", o));
}

struct qlabels {
	json_t *labels;
	const char *bad;
};

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	(void)kind;
	struct qlabels *q = cls;
	if (strcmp(key, "label") != 0)
		return MHD_YES;
	const char *eq = value ? strchr(value, '=') : NULL;
	if (!eq || eq == value || (size_t)(eq - value) > HR_MAX_LABEL_LEN) {
		q->bad = value ? value : "";
		return MHD_NO;
	}
	char k[HR_MAX_LABEL_LEN + 1];
	memcpy(k, value, (size_t)(eq - value));
	k[eq - value] = 0;
	json_object_set_new(q->labels, k, json_string(eq + 1));
	return MHD_YES;
}

enum MHD_Result h_import(struct call *k)
{
	/* the body: the file itself, or {file, jsonl, format, name, labels} */
	const char *file = k->body, *jsonl = NULL, *format = arg(k->conn, "format");
	const char *name = arg(k->conn, "name");
	size_t flen = k->body_len, jlen = 0;
	json_t *env = NULL, *labels = json_object();
	struct qlabels q = {.labels = labels};
	MHD_get_connection_values(k->conn, MHD_GET_ARGUMENT_KIND, each_arg, &q);
	if (q.bad) {
		json_decref(labels);
		return reply_error(k->conn, 400, "invalid_value", "label",
				   "'label' must be KEY=VALUE with a key of 1 to %d bytes",
				   HR_MAX_LABEL_LEN);
	}
	json_t *body = k->body_len ? json_loadb(k->body, k->body_len, 0, NULL) : NULL;
	json_t *bf = json_object_get(body, "file");
	if (json_is_string(bf)) {
		env = body;
		body = NULL;
		const char *key;
		json_t *v;
		static const char *const keys[] = {"file", "jsonl", "format", "name", "labels"};
		json_object_foreach(env, key, v)
		{
			int known = 0;
			for (size_t i = 0; i < HR_ARRAY_LEN(keys); i++)
				known |= strcmp(key, keys[i]) == 0;
			/* answered before env (which holds key) is released */
			enum MHD_Result ret;
			if (!known) {
				ret = reply_error(k->conn, 400, "unknown_field", key,
						  "unknown member '%s': an import is {file, jsonl, "
						  "format, name, labels}",
						  key);
				json_decref(env);
				json_decref(labels);
				return ret;
			}
			if (strcmp(key, "labels") == 0 ? !json_is_object(v) : !json_is_string(v)) {
				ret = reply_error(k->conn, 400, "wrong_type", key, "'%s' must be %s", key,
						  strcmp(key, "labels") == 0 ? "an object of strings"
									    : "a string");
				json_decref(env);
				json_decref(labels);
				return ret;
			}
		}
		file = json_string_value(bf);
		flen = json_string_length(bf);
		json_t *j = json_object_get(env, "jsonl");
		if (j) {
			jsonl = json_string_value(j);
			jlen = json_string_length(j);
		}
		if (json_object_get(env, "format"))
			format = json_string_value(json_object_get(env, "format"));
		if (json_object_get(env, "name"))
			name = json_string_value(json_object_get(env, "name"));
		json_object_update(labels, json_object_get(env, "labels"));
	}
	json_decref(body);
	if (flen == 0) {
		json_decref(env);
		json_decref(labels);
		return reply_error(k->conn, 400, "missing_field", "file",
				   "the body must be the file to import (or {\"file\": its text})");
	}
	struct import_result *res;
	size_t nres;
	struct import_error ie;
	if (import_parse_all(file, flen, jsonl, jlen, format, &res, &nres, &ie) < 0) {
		json_decref(env);
		json_decref(labels);
		return import_refused(k, &ie);
	}
	/* the specs: what the file states, named and labelled, checked as any
	 * (all of them before anything is stored) */
	struct spec *sps = xcalloc(nres, sizeof *sps);
	for (size_t i = 0; i < nres; i++) {
		char base[256], dname[300];
		if (name)
			snprintf(base, sizeof base, "%s", name);
		else
			snprintf(base, sizeof base, "%s import", res[i].producer);
		if (nres > 1) /* a report's benchmarks: "NAME 2/5" */
			snprintf(dname, sizeof dname, "%s %zu/%zu", base, i + 1, nres);
		else
			snprintf(dname, sizeof dname, "%s", base);
		json_object_set_new(res[i].spec, "name", json_string(dname));
		json_object_set(res[i].spec, "labels", labels);
		struct spec_error se;
		if (spec_from_json(res[i].spec, 1, &sps[i], &se) < 0) {
			for (size_t j = 0; j < i; j++)
				spec_release(&sps[j]);
			free(sps);
			json_decref(env);
			json_decref(labels);
			import_results_release(res, nres);
			if (strncmp(se.field, "labels", 6) == 0 || strcmp(se.field, "name") == 0)
				return reply_error(k->conn, 400, se.code, se.field, "%s", se.message);
			return reply_error(k->conn, 400, "invalid_value", "file",
					   "the load the file states is not one headroom can "
					   "describe (%s: %s)",
					   se.field, se.message);
		}
	}
	json_decref(labels);
	char err[HR_ERRLEN], sha[65], jsha[65];
	sha256_hex(file, flen, sha);
	if (jsonl)
		sha256_hex(jsonl, jlen, jsha);
	int64_t *ids = xcalloc(nres, sizeof *ids);
	size_t stored = 0;
	int rc = 0;
	if (keep_file(k->a->store, file, flen, sha, err) < 0 ||
	    (jsonl && keep_file(k->a->store, jsonl, jlen, jsha, err) < 0))
		rc = -1;
	const char *jsp = jsonl ? jsha : NULL;
	json_decref(env); /* file and jsonl are not read past here */
	file = jsonl = NULL;
	for (size_t i = 0; rc == 0 && i < nres; i++) {
		rc = store_one(k, &res[i], &sps[i], sha, jsp, flen, jlen, &ids[i], err);
		stored += rc == 0;
	}
	for (size_t i = 0; i < nres; i++)
		spec_release(&sps[i]);
	free(sps);
	int many = strncmp(res[0].format, "guidellm", 8) == 0;
	import_results_release(res, nres);
	if (rc < 0) { /* nothing half-imported stays: the runs stored already go */
		char e2[HR_ERRLEN];
		for (size_t i = 0; i < stored; i++)
			history_delete(k->a->store, ids[i], e2);
		free(ids);
		return reply_internal(k->conn, err);
	}
	json_t *runs = json_array();
	for (size_t i = 0; i < nres; i++) {
		json_t *run;
		if (runs_get(k->a->store, ids[i], 1, &run, err) < 0) {
			json_decref(runs);
			free(ids);
			return reply_internal(k->conn, err);
		}
		json_array_append_new(runs, run);
	}
	if (k->auth) {
		if (nres == 1)
			snprintf(k->auth->detail, sizeof k->auth->detail, "run %lld",
				 (long long)ids[0]);
		else
			snprintf(k->auth->detail, sizeof k->auth->detail, "runs %lld-%lld",
				 (long long)ids[0], (long long)ids[nres - 1]);
	}
	free(ids);
	if (many) /* a GuideLLM report: every benchmark's run */
		return reply_json(k->conn, 201, json_pack("{s:o}", "runs", runs));
	json_t *run = json_incref(json_array_get(runs, 0));
	json_decref(runs);
	return reply_json(k->conn, 201, run);
}
