/* telesum.c - telemetry window statistics and raw exports (see telesum.h). */
#include "telesum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "prom.h"
#include "stats.h"
#include "util.h"

struct pt {
	int64_t t;
	double v;
	char *detail; /* histograms */
};

struct group {
	char *source, *series, *gpu, *labels, *kind;
	struct pt *p;
	size_t n, cap;
};

static void group_reset(struct group *g)
{
	free(g->source);
	free(g->series);
	free(g->gpu);
	free(g->labels);
	free(g->kind);
	for (size_t i = 0; i < g->n; i++)
		free(g->p[i].detail);
	free(g->p);
	memset(g, 0, sizeof *g);
}

static char *col(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return xstrdup(t ? (const char *)t : "");
}

static int same_group(const struct group *g, sqlite3_stmt *st)
{
	const char *cols[] = {g->source, g->series, g->gpu, g->labels};
	for (int i = 0; i < 4; i++) {
		const unsigned char *t = sqlite3_column_text(st, i);
		if (strcmp(cols[i], t ? (const char *)t : "") != 0)
			return 0;
	}
	return 1;
}

/* Indices of the samples bracketing [ws, we]: the last at or before ws
 * (else the first), the first at or after we (else the last). */
static void bracket(const struct group *g, int64_t ws, int64_t we, size_t *a, size_t *b)
{
	*a = 0;
	for (size_t i = 0; i < g->n && g->p[i].t <= ws; i++)
		*a = i;
	*b = g->n - 1;
	for (size_t i = g->n; i-- > 0;)
		if (g->p[i].t >= we)
			*b = i;
		else
			break;
}

/* Increase of a counter over [a, b], tolerating resets (a drop restarts). */
static double increase(const struct group *g, size_t a, size_t b)
{
	double inc = 0;
	for (size_t i = a + 1; i <= b; i++) {
		double d = g->p[i].v - g->p[i - 1].v;
		inc += d >= 0 ? d : g->p[i].v;
	}
	return inc;
}

/* Bucket counts of a stored histogram sample ({"sum", "buckets": [[le|null, n]]}). */
static size_t buckets_of(const char *detail, struct prom_bucket *out, size_t max)
{
	json_t *j = detail ? json_loads(detail, 0, NULL) : NULL;
	size_t n = 0, i;
	json_t *b;
	json_array_foreach(json_object_get(j, "buckets"), i, b)
	{
		if (n == max)
			break;
		json_t *le = json_array_get(b, 0);
		out[n].bound = json_is_null(le) ? INFINITY : json_number_value(le);
		out[n].value = json_number_value(json_array_get(b, 1));
		n++;
	}
	json_decref(j);
	return n;
}

#define MAX_BUCKETS 128

/* GPU energy and power, per source: NVML and a DCGM exporter usually see
 * the same GPUs, so only one source's figures are used (NVML first). */
struct energy {
	double energy_j[2], power_w[2];
	int has_energy[2], has_power[2];
};

static json_t *group_json(struct group *g, int64_t ws, int64_t we, struct energy *en)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "source", g->source, "name",
			      g->series, "gpu", g->gpu, "labels", g->labels, "kind", g->kind);
	if (g->n == 0)
		return o;
	if (strcmp(g->kind, "gauge") == 0) {
		struct dvec d;
		dvec_init(&d);
		for (size_t i = 0; i < g->n; i++)
			if (g->p[i].t >= ws && g->p[i].t <= we && !isnan(g->p[i].v))
				dvec_push(&d, g->p[i].v);
		struct stats st;
		stats_compute(d.v, d.n, &st);
		json_object_set_new(o, "count", json_integer((json_int_t)st.count));
		if (st.count) {
			json_object_set_new(o, "avg", json_real(st.avg));
			json_object_set_new(o, "min", json_real(st.min));
			json_object_set_new(o, "max", json_real(st.max));
			json_object_set_new(o, "p50", json_real(st.p[4]));
			json_object_set_new(o, "p90", json_real(st.p[6]));
			json_object_set_new(o, "p99", json_real(st.p[8]));
			int k = strcmp(g->source, "nvml") == 0 ? 0 : 1;
			if (strcmp(g->series, "gpu.power_w") == 0) {
				en->power_w[k] += st.avg;
				en->has_power[k] = 1;
			}
		}
		dvec_release(&d);
		return o;
	}
	size_t a, b;
	bracket(g, ws, we, &a, &b);
	double dt = (double)(g->p[b].t - g->p[a].t) / 1e9;
	if (strcmp(g->kind, "counter") == 0) {
		double inc = increase(g, a, b);
		json_object_set_new(o, "delta", json_real(inc));
		json_object_set_new(o, "rate", dt > 0 ? json_real(inc / dt) : json_null());
		if (strcmp(g->series, "gpu.energy_j") == 0 && b > a) {
			int k = strcmp(g->source, "nvml") == 0 ? 0 : 1;
			en->energy_j[k] += inc;
			en->has_energy[k] = 1;
		}
		return o;
	}
	/* histogram: bucket increases over the window; with a single sample
	 * there is no increase to measure */
	if (a == b) {
		json_object_set_new(o, "count", json_real(0));
		return o;
	}
	struct prom_bucket b0[MAX_BUCKETS], b1[MAX_BUCKETS];
	size_t n0 = buckets_of(g->p[a].detail, b0, MAX_BUCKETS);
	size_t n1 = buckets_of(g->p[b].detail, b1, MAX_BUCKETS);
	int reset = n0 != n1 || (n1 && b1[n1 - 1].value < b0[n0 - 1].value);
	if (!reset) /* a server restarted inside the window counts from zero */
		for (size_t i = 0; i < n1; i++)
			b1[i].value -= b0[i].value;
	double count = n1 ? b1[n1 - 1].value : 0;
	json_object_set_new(o, "count", json_real(count));
	json_object_set_new(o, "p50", json_real(prom_histogram_quantile(0.5, b1, n1)));
	json_object_set_new(o, "p90", json_real(prom_histogram_quantile(0.9, b1, n1)));
	json_object_set_new(o, "p99", json_real(prom_histogram_quantile(0.99, b1, n1)));
	/* json_real(NaN) is NULL: those keys are simply absent */
	return o;
}

/* A nullable text column as a JSON string or null. */
static json_t *text_or_null(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? json_string(t) : json_null();
}

/* The rows of sql (its one parameter: the run id) as an array with one
 * row(st) each; empty when the query cannot run. */
static json_t *run_rows(sqlite3 *db, const char *sql, int64_t run_id,
			json_t *(*row)(sqlite3_stmt *st))
{
	sqlite3_stmt *st = NULL;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(arr, row(st));
	}
	sqlite3_finalize(st);
	return arr;
}

static json_t *source_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:I}", "source", sqlite3_column_text(st, 0),
			 "target", sqlite3_column_text(st, 1), "status",
			 sqlite3_column_text(st, 2), "detail", text_or_null(st, 3), "samples",
			 (json_int_t)sqlite3_column_int64(st, 4));
}

json_t *tele_sources(struct store *s, int64_t run_id)
{
	sqlite3 *db = store_reader(s);
	json_t *arr = run_rows(db,
			       "SELECT source, target, status, detail, samples FROM "
			       "telemetry_sources WHERE run_id = ? ORDER BY rowid",
			       run_id, source_row);
	store_reader_put(s, db);
	return arr;
}

static json_t *gpu_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "source", sqlite3_column_text(st, 0), "gpu",
			 sqlite3_column_text(st, 1), "index",
			 sqlite3_column_type(st, 2) == SQLITE_NULL
				 ? json_null()
				 : json_integer(sqlite3_column_int64(st, 2)),
			 "uuid", text_or_null(st, 3), "name", text_or_null(st, 4));
}

json_t *tele_gpus(struct store *s, int64_t run_id)
{
	sqlite3 *db = store_reader(s);
	json_t *arr = run_rows(db,
			       "SELECT source, gpu, idx, uuid, name FROM telemetry_gpus WHERE "
			       "run_id = ? ORDER BY CASE source WHEN 'nvml' THEN 0 WHEN 'dcgm' "
			       "THEN 1 ELSE 2 END, idx IS NULL, idx, gpu",
			       run_id, gpu_row);
	store_reader_put(s, db);
	return arr;
}

static json_t *anchor_row(sqlite3_stmt *st)
{
	return json_pack("{s:I, s:I, s:I}", "worker", (json_int_t)sqlite3_column_int64(st, 0),
			 "mono_ns", (json_int_t)sqlite3_column_int64(st, 1), "wall_ns",
			 (json_int_t)sqlite3_column_int64(st, 2));
}

json_t *tele_clock(struct store *s, int64_t run_id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	json_t *daemon = json_null();
	if (sqlite3_prepare_v2(db,
			       "SELECT mono_ns, wall_ns FROM telemetry_clock WHERE run_id = ?", -1,
			       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		if (sqlite3_step(st) == SQLITE_ROW)
			daemon = json_pack("{s:I, s:I}", "mono_ns",
					   (json_int_t)sqlite3_column_int64(st, 0), "wall_ns",
					   (json_int_t)sqlite3_column_int64(st, 1));
	}
	sqlite3_finalize(st);
	json_t *workers = run_rows(db,
				   "SELECT idx, mono_anchor_ns, wall_anchor_ns FROM run_workers WHERE "
				   "run_id = ? AND mono_anchor_ns IS NOT NULL AND wall_anchor_ns IS "
				   "NOT NULL ORDER BY idx",
				   run_id, anchor_row);
	store_reader_put(s, db);
	return json_pack("{s:o, s:o}", "daemon", daemon, "workers", workers);
}

void tele_export_members(struct store *s, int64_t run_id, struct dynbuf *out)
{
	json_t *m[3] = {tele_sources(s, run_id), tele_gpus(s, run_id), tele_clock(s, run_id)};
	static const char *const names[3] = {"sources", "gpus", "clock"};
	for (int i = 0; i < 3; i++) {
		char *txt = json_dumps(m[i], JSON_COMPACT);
		json_decref(m[i]);
		dynbuf_printf(out, ",\"%s\":%s", names[i], txt ? txt : "null");
		free(txt);
	}
}

json_t *telesum_compute(struct store *s, int64_t run_id, int64_t ws, int64_t we,
			long long output_tokens)
{
	json_t *series = json_array();
	struct energy en;
	memset(&en, 0, sizeof en);
	long long raw = 0;
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT source, series, gpu, labels, kind, t_ns, value, detail "
			       "FROM telemetry WHERE run_id = ? "
			       "ORDER BY source, series, gpu, labels, t_ns",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		struct group g = {0};
		int more;
		do {
			more = sqlite3_step(st) == SQLITE_ROW;
			if (g.series && (!more || !same_group(&g, st))) {
				/* summaries carry the mapped concepts; raw series stay in
				 * the export */
				if (strncmp(g.series, "gpu.", 4) == 0 ||
				    strncmp(g.series, "server.", 7) == 0)
					json_array_append_new(
						series, group_json(&g, ws, we, &en));
				else
					raw++;
				group_reset(&g);
			}
			if (!more)
				break;
			if (!g.series) {
				g.source = col(st, 0);
				g.series = col(st, 1);
				g.gpu = col(st, 2);
				g.labels = col(st, 3);
				g.kind = col(st, 4);
			}
			if (g.n == g.cap) {
				g.cap = g.cap ? g.cap * 2 : 64;
				g.p = xrealloc(g.p, g.cap * sizeof *g.p);
			}
			g.p[g.n].t = sqlite3_column_int64(st, 5);
			g.p[g.n].v = sqlite3_column_type(st, 6) == SQLITE_NULL
					     ? NAN
					     : sqlite3_column_double(st, 6);
			g.p[g.n].detail = sqlite3_column_type(st, 7) == SQLITE_NULL ? NULL
										   : col(st, 7);
			g.n++;
		} while (more);
		group_reset(&g);
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	double window_s = we > ws ? (double)(we - ws) / 1e9 : 0;
	double energy = NAN;
	for (int k = 0; k < 2 && isnan(energy); k++) {
		if (en.has_energy[k])
			energy = en.energy_j[k];
		else if (en.has_power[k] && window_s > 0)
			energy = en.power_w[k] * window_s; /* only power: mean power x time */
	}
	json_t *o = json_object();
	json_object_set_new(o, "sources", tele_sources(s, run_id));
	json_object_set_new(o, "gpus", tele_gpus(s, run_id));
	json_object_set_new(o, "window_start_ns", ws ? json_integer(ws) : json_null());
	json_object_set_new(o, "window_end_ns", we ? json_integer(we) : json_null());
	json_object_set_new(o, "series", series);
	json_object_set_new(o, "raw_series", json_integer(raw));
	json_object_set_new(o, "energy_j", isnan(energy) ? json_null() : json_real(energy));
	json_object_set_new(o, "energy_per_output_token_j",
			    !isnan(energy) && output_tokens > 0
				    ? json_real(energy / (double)output_tokens)
				    : json_null());
	return o;
}

/* --- raw export -------------------------------------------------------------- */

const char tele_csv_header[] = "t_ns,t_s,source,name,gpu,labels,kind,value,detail\n";

struct tele_cursor {
	struct store *store;
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t t0;
};

struct tele_cursor *tele_cursor_open(struct store *s, int64_t run_id, int64_t t0_wall)
{
	struct tele_cursor *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->t0 = t0_wall;
	c->db = store_reader(s);
	if (sqlite3_prepare_v2(c->db,
			       "SELECT t_ns, source, series, gpu, labels, kind, value, detail "
			       "FROM telemetry WHERE run_id = ? ORDER BY t_ns, source, series, "
			       "gpu, labels",
			       -1, &c->st, NULL) != SQLITE_OK) {
		tele_cursor_free(c);
		return NULL;
	}
	sqlite3_bind_int64(c->st, 1, run_id);
	return c;
}

int tele_cursor_next(struct tele_cursor *c, int csv, struct dynbuf *out)
{
	int rc = sqlite3_step(c->st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return -1;
	sqlite3_stmt *st = c->st;
	int64_t t = sqlite3_column_int64(st, 0);
	double ts = c->t0 ? (double)(t - c->t0) / 1e9 : NAN;
	const char *f[5];
	for (int i = 0; i < 5; i++) {
		const unsigned char *x = sqlite3_column_text(st, i + 1);
		f[i] = x ? (const char *)x : "";
	}
	int has_v = sqlite3_column_type(st, 6) != SQLITE_NULL;
	double v = has_v ? sqlite3_column_double(st, 6) : NAN;
	const char *detail = (const char *)sqlite3_column_text(st, 7);
	char vb[32], tb[32];
	fmt_double(vb, v);
	fmt_double(tb, ts);
	if (csv) {
		dynbuf_printf(out, "%lld,%s", (long long)t, isnan(ts) ? "" : tb);
		for (int i = 0; i < 5; i++) {
			dynbuf_add(out, ",", 1);
			export_csv_cell(out, f[i]);
		}
		dynbuf_printf(out, ",%s,", has_v ? vb : "");
		export_csv_cell(out, detail ? detail : "");
		dynbuf_add(out, "\n", 1);
		return 1;
	}
	json_t *o = json_pack("{s:I, s:o, s:s, s:s, s:s, s:s, s:s, s:o}", "t_ns", (json_int_t)t,
			      "t_s", isnan(ts) ? json_null() : json_real(ts), "source", f[0],
			      "name", f[1], "gpu", f[2], "labels", f[3], "kind", f[4], "value",
			      has_v && isfinite(v) ? json_real(v) : json_null());
	if (detail) {
		json_t *d = json_loads(detail, 0, NULL);
		json_object_set_new(o, "detail", d ? d : json_null());
	}
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(o);
	if (!s)
		return -1;
	dynbuf_addstr(out, s);
	free(s);
	return 1;
}

void tele_cursor_free(struct tele_cursor *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->st);
	store_reader_put(c->store, c->db);
	free(c);
}
