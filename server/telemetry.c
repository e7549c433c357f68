/* telemetry.c - the per-run telemetry collector thread (see telemetry.h). */
#include "telemetry.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "dynbuf.h"
#include "log.h"
#include "hrlimits.h"
#include "nvml.h"
#include "prom.h"
#include "promap.h"
#include "util.h"

enum src_kind { SRC_NVML, SRC_DCGM, SRC_SERVER };
static const char *const src_names[] = {"nvml", "dcgm", "server"};

struct source {
	int kind;
	char *target; /* URL or NVML library path */
	int ok;       /* the last pass succeeded */
	long long samples;
	char detail[HR_ERRLEN];
	CURL *easy;        /* pages: this source's own transfer */
	struct dynbuf body;
	int busy;          /* a transfer is in flight */
	int passes;        /* passes completed, failed ones included */
	int64_t due;       /* monotonic ns of its next pass */
	char cerr[CURL_ERROR_SIZE];
	const struct netallow *allow; /* borrowed; NULL: all allowed */
	char *host;                   /* the URL's host, for the allow-list's names */
	char refused[200];            /* why the allow-list refused an address, or "" */
};

/* What a source said about one GPU; strings owned, NULL when unknown. */
struct tgpu {
	const char *source; /* static */
	char *gpu;          /* the key of its samples */
	int idx;            /* -1 when unknown */
	char *uuid, *name;
};

/* One stored sample; strings owned. */
struct tsample {
	int64_t t_ns;
	const char *source; /* static */
	char *series, *gpu, *labels;
	const char *kind;   /* static */
	double value;
	char *detail;
};

struct tbatch {
	int64_t run_id;
	struct tsample *v;
	size_t n, cap;
	struct tgpu *g; /* GPUs first seen, or seen with other details */
	size_t ng, gcap;
};

struct collector {
	struct store *store;
	int64_t run_id;
	const struct spec *spec;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int quick;    /* stopping for a cancel or a daemon stop: no waiting on pages */
	int baseline; /* every source has completed its first pass */
	struct nvml *nvml;
	CURLM *multi;
	struct source *src;
	int nsrc;
	struct tgpu *gpus; /* every GPU seen so far (the collector thread's) */
	int ngpus;
};

/* --- storing --------------------------------------------------------------- */

static void batch_add(struct tbatch *b, int64_t t, const char *source, const char *series,
		      const char *gpu, const char *labels, const char *kind, double value,
		      char *detail /* taken */)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->v = xrealloc(b->v, b->cap * sizeof *b->v);
	}
	struct tsample *s = &b->v[b->n++];
	s->t_ns = t;
	s->source = source;
	s->series = xstrdup(series);
	s->gpu = xstrdup(gpu ? gpu : "");
	s->labels = xstrdup(labels ? labels : "");
	s->kind = kind;
	s->value = value;
	s->detail = detail;
}

static void batch_free(void *p)
{
	struct tbatch *b = p;
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].series);
		free(b->v[i].gpu);
		free(b->v[i].labels);
		free(b->v[i].detail);
	}
	free(b->v);
	for (size_t i = 0; i < b->ng; i++) {
		free(b->g[i].gpu);
		free(b->g[i].uuid);
		free(b->g[i].name);
	}
	free(b->g);
	free(b);
}

static int batch_job(struct store_tx *tx, void *arg, char *err)
{
	struct tbatch *b = arg;
	static const char sql[] = "INSERT INTO telemetry (run_id, t_ns, source, series, gpu, "
				  "labels, kind, value, detail) VALUES (?,?,?,?,?,?,?,?,?)";
	for (size_t i = 0; i < b->n; i++) {
		const struct tsample *s = &b->v[i];
		sqlite3_stmt *st = store_tx_stmt(tx, sql);
		sqlite3_bind_int64(st, 1, b->run_id);
		sqlite3_bind_int64(st, 2, s->t_ns);
		sqlite3_bind_text(st, 3, s->source, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, s->series, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, s->gpu, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, s->labels, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, s->kind, -1, SQLITE_STATIC);
		if (s->value == s->value) /* NaN is stored as NULL */
			sqlite3_bind_double(st, 8, s->value);
		if (s->detail)
			sqlite3_bind_text(st, 9, s->detail, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			return errf(err, "telemetry insert: %s", sqlite3_errmsg(tx->db));
	}
	static const char gsql[] =
		"INSERT INTO telemetry_gpus (run_id, source, gpu, idx, uuid, name) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run_id, source, gpu) DO UPDATE SET "
		"idx = coalesce(?4, idx), uuid = coalesce(?5, uuid), name = coalesce(?6, name)";
	for (size_t i = 0; i < b->ng; i++) {
		const struct tgpu *g = &b->g[i];
		sqlite3_stmt *st = store_tx_stmt(tx, gsql);
		sqlite3_bind_int64(st, 1, b->run_id);
		sqlite3_bind_text(st, 2, g->source, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, g->gpu, -1, SQLITE_STATIC);
		if (g->idx >= 0)
			sqlite3_bind_int(st, 4, g->idx);
		if (g->uuid)
			sqlite3_bind_text(st, 5, g->uuid, -1, SQLITE_STATIC);
		if (g->name)
			sqlite3_bind_text(st, 6, g->name, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			return errf(err, "telemetry GPUs: %s", sqlite3_errmsg(tx->db));
	}
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

/* A source reported GPU `gpu` (the key of its samples) with these details
 * (idx -1, uuid or name NULL when it did not say): remember it, and store it
 * with the batch when it is new or a detail changed. */
static void note_gpu(struct collector *c, struct tbatch *b, const char *source, const char *gpu,
		     int idx, const char *uuid, const char *name)
{
	if (!gpu || !*gpu)
		return;
	uuid = uuid && *uuid ? uuid : NULL;
	name = name && *name ? name : NULL;
	struct tgpu *k = NULL;
	for (int i = 0; i < c->ngpus && !k; i++)
		if (c->gpus[i].source == source && strcmp(c->gpus[i].gpu, gpu) == 0)
			k = &c->gpus[i];
	if (k && (idx < 0 || k->idx == idx) && (!uuid || same_str(k->uuid, uuid)) &&
	    (!name || same_str(k->name, name)))
		return; /* nothing new */
	if (!k) {
		c->gpus = xrealloc(c->gpus, (size_t)(c->ngpus + 1) * sizeof *c->gpus);
		k = &c->gpus[c->ngpus++];
		memset(k, 0, sizeof *k);
		k->source = source;
		k->gpu = xstrdup(gpu);
		k->idx = -1;
	}
	if (idx >= 0)
		k->idx = idx;
	if (uuid) {
		free(k->uuid);
		k->uuid = xstrdup(uuid);
	}
	if (name) {
		free(k->name);
		k->name = xstrdup(name);
	}
	if (b->ng == b->gcap) {
		b->gcap = b->gcap ? b->gcap * 2 : 8;
		b->g = xrealloc(b->g, b->gcap * sizeof *b->g);
	}
	struct tgpu *g = &b->g[b->ng++];
	g->source = source;
	g->gpu = xstrdup(gpu);
	g->idx = k->idx;
	g->uuid = dup_or_null(k->uuid);
	g->name = dup_or_null(k->name);
}

struct clock_args {
	int64_t run_id, mono, wall;
};

static int clock_job(struct store_tx *tx, void *arg, char *err)
{
	struct clock_args *a = arg;
	sqlite3_stmt *st = store_tx_stmt(tx, "INSERT OR REPLACE INTO telemetry_clock (run_id, "
					     "mono_ns, wall_ns) VALUES (?, ?, ?)");
	sqlite3_bind_int64(st, 1, a->run_id);
	sqlite3_bind_int64(st, 2, a->mono);
	sqlite3_bind_int64(st, 3, a->wall);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "telemetry clock: %s", sqlite3_errmsg(tx->db));
	return 0;
}

struct src_args {
	int64_t run_id;
	struct source *src; /* owned copy */
	int n;
};

static void src_args_free(void *p)
{
	struct src_args *a = p;
	for (int i = 0; i < a->n; i++)
		free(a->src[i].target);
	free(a->src);
	free(a);
}

static int sources_job(struct store_tx *tx, void *arg, char *err)
{
	struct src_args *a = arg;
	static const char sql[] =
		"INSERT INTO telemetry_sources (run_id, source, target, status, detail, samples) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run_id, source, target) DO UPDATE "
		"SET status = ?4, detail = ?5, samples = ?6";
	for (int i = 0; i < a->n; i++) {
		const struct source *s = &a->src[i];
		sqlite3_stmt *st = store_tx_stmt(tx, sql);
		sqlite3_bind_int64(st, 1, a->run_id);
		sqlite3_bind_text(st, 2, src_names[s->kind], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, s->target, -1, SQLITE_STATIC);
		/* a source is ok when any of its passes delivered samples */
		sqlite3_bind_text(st, 4, s->samples > 0 ? "ok" : "unavailable", -1, SQLITE_STATIC);
		if (s->detail[0])
			sqlite3_bind_text(st, 5, s->detail, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, s->samples);
		if (sqlite3_step(st) != SQLITE_DONE)
			return errf(err, "telemetry sources: %s", sqlite3_errmsg(tx->db));
	}
	return 0;
}

static void post_sources(struct collector *c)
{
	struct src_args *a = xcalloc(1, sizeof *a);
	a->run_id = c->run_id;
	a->n = c->nsrc;
	a->src = xcalloc((size_t)c->nsrc, sizeof *a->src);
	for (int i = 0; i < c->nsrc; i++) {
		a->src[i] = c->src[i];
		a->src[i].target = xstrdup(c->src[i].target);
	}
	store_post(c->store, sources_job, a, src_args_free);
}

/* --- NVML --------------------------------------------------------------------- */

static void sample_nvml(struct collector *c, struct source *src, struct tbatch *b)
{
	if (!c->nvml)
		return;
	struct nvml_sample g[HR_NVML_MAX_GPUS];
	int n = 0;
	char err[HR_ERRLEN];
	if (nvml_sample(c->nvml, g, HR_NVML_MAX_GPUS, &n, err) < 0) {
		snprintf(src->detail, sizeof src->detail, "%.250s", err);
		src->ok = 0;
		return;
	}
	if (n == 0) { /* loaded and initialised, yet nothing to sample */
		snprintf(src->detail, sizeof src->detail, "no GPU found (NVML reports 0 devices)");
		src->ok = 0;
		return;
	}
	src->ok = 1;
	for (int i = 0; i < n; i++) {
		char idx[16];
		snprintf(idx, sizeof idx, "%d", g[i].index);
		const char *gpu = (g[i].valid & HR_NVML_UUID) ? g[i].uuid : idx;
		note_gpu(c, b, "nvml", gpu, g[i].index,
			 (g[i].valid & HR_NVML_UUID) ? g[i].uuid : NULL,
			 (g[i].valid & HR_NVML_NAME) ? g[i].name : NULL);
		struct {
			unsigned bit;
			const char *name, *kind;
			double v;
		} f[] = {
			{HR_NVML_POWER, "gpu.power_w", "gauge", g[i].power_w},
			{HR_NVML_ENERGY, "gpu.energy_j", "counter", g[i].energy_j},
			{HR_NVML_GPU_UTIL, "gpu.util_pct", "gauge", g[i].gpu_util_pct},
			{HR_NVML_MEM_UTIL, "gpu.mem_util_pct", "gauge", g[i].mem_util_pct},
			{HR_NVML_MEM_USED, "gpu.mem_used_bytes", "gauge", (double)g[i].mem_used_bytes},
			{HR_NVML_MEM_TOTAL, "gpu.mem_total_bytes", "gauge",
			 (double)g[i].mem_total_bytes},
			{HR_NVML_TEMP, "gpu.temp_c", "gauge", g[i].temp_c},
			{HR_NVML_SM_CLOCK, "gpu.sm_clock_mhz", "gauge", g[i].sm_clock_mhz},
			{HR_NVML_MEM_CLOCK, "gpu.mem_clock_mhz", "gauge", g[i].mem_clock_mhz},
		};
		for (size_t k = 0; k < HR_ARRAY_LEN(f); k++) {
			if (!(g[i].valid & f[k].bit))
				continue;
			batch_add(b, g[i].wall_ns, "nvml", f[k].name, gpu, NULL, f[k].kind, f[k].v,
				  NULL);
			src->samples++;
		}
		if (g[i].error[0] && !src->detail[0])
			snprintf(src->detail, sizeof src->detail, "GPU %d: %.200s", g[i].index,
				 g[i].error);
	}
}

/* --- Prometheus pages ------------------------------------------------------------ */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct dynbuf *b = ud;
	return dynbuf_add(b, p, size * n) < 0 ? 0 : size * n;
}

/* Identifying labels of a sample other than the GPU ones, as {k="v",...}. */
static char *label_text(const struct prom_sample *s)
{
	static const char *const skip[] = {"gpu",	"UUID", "gpu_uuid", "device",
					   "modelName", "Hostname", "le", "quantile"};
	struct dynbuf b;
	dynbuf_init(&b, 64 * 1024);
	for (size_t i = 0; s && i < s->nlabels; i++) {
		int drop = 0;
		for (size_t k = 0; k < HR_ARRAY_LEN(skip); k++)
			drop |= strcmp(s->labels[i].name, skip[k]) == 0;
		if (drop)
			continue;
		dynbuf_printf(&b, "%s%s=\"", b.len ? "," : "{", s->labels[i].name);
		for (const char *v = s->labels[i].value; *v; v++) {
			if (*v == '"' || *v == '\\')
				dynbuf_add(&b, "\\", 1);
			dynbuf_add(&b, *v == '\n' ? "n" : v, 1);
		}
		dynbuf_add(&b, "\"", 1);
	}
	if (b.len)
		dynbuf_add(&b, "}", 1);
	return dynbuf_take(&b, NULL);
}

static char *histogram_detail(const struct promap_obs *o)
{
	json_t *bk = json_array();
	for (size_t i = 0; i < o->nbuckets; i++)
		json_array_append_new(bk, json_pack("[o, f]",
						    isinf(o->buckets[i].bound)
							    ? json_null() /* +Inf */
							    : json_real(o->buckets[i].bound),
						    o->buckets[i].value));
	json_t *d = json_pack("{s:f, s:o}", "sum", o->sum == o->sum ? o->sum : 0.0, "buckets",
			      bk);
	char *s = json_dumps(d, JSON_COMPACT | JSON_ALLOW_NUL);
	json_decref(d);
	return s;
}

/* Queue the page's transfer on the multi handle. */
static void scrape_start(struct collector *c, struct source *src)
{
	dynbuf_reset(&src->body);
	src->cerr[0] = '\0';
	src->refused[0] = '\0';
	if (curl_multi_add_handle(c->multi, src->easy) != CURLM_OK) {
		snprintf(src->detail, sizeof src->detail, "%.200s: cannot start the transfer",
			 src->target);
		src->ok = 0;
		src->passes++;
		return;
	}
	src->busy = 1;
}

/* The page's transfer ended with rc: parse and store what it brought. */
static void scrape_done(struct collector *c, struct source *src, CURLcode rc, struct tbatch *b)
{
	int64_t t = wall_ns();
	long status = 0;
	curl_easy_getinfo(src->easy, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK && src->refused[0]) {
		snprintf(src->detail, sizeof src->detail, "%.120s: address not allowed: %.100s",
			 src->target, src->refused);
		src->ok = 0;
		return;
	}
	if (rc != CURLE_OK) {
		snprintf(src->detail, sizeof src->detail, "%.120s: %.120s", src->target,
			 src->cerr[0] ? src->cerr : curl_easy_strerror(rc));
		src->ok = 0;
		return;
	}
	if (status != 200) {
		snprintf(src->detail, sizeof src->detail, "%.200s: HTTP %ld", src->target, status);
		src->ok = 0;
		return;
	}
	struct prom_doc doc;
	char err[HR_ERRLEN];
	if (prom_parse(src->body.data ? src->body.data : "", src->body.len, 0, &doc, err) < 0) {
		snprintf(src->detail, sizeof src->detail, "%.120s: %.120s", src->target, err);
		src->ok = 0;
		prom_doc_release(&doc);
		return;
	}
	if (doc.bad_lines && !src->detail[0])
		snprintf(src->detail, sizeof src->detail, "%.200s: %zu malformed line(s) skipped",
			 src->target, doc.bad_lines);
	struct promap_list l;
	promap_collect(&doc, 0, &l);
	const char *source = src_names[src->kind];
	for (size_t i = 0; i < l.n; i++) {
		const struct promap_obs *o = &l.obs[i];
		char idx[16] = "";
		if (o->gpu_index >= 0)
			snprintf(idx, sizeof idx, "%d", o->gpu_index);
		const char *gpu = o->gpu_uuid ? o->gpu_uuid : idx;
		note_gpu(c, b, source, gpu, o->gpu_index, o->gpu_uuid, o->gpu_model);
		char *labels = label_text(o->sample);
		const char *kind = o->kind == PROMAP_COUNTER	 ? "counter"
				   : o->kind == PROMAP_HISTOGRAM ? "histogram"
								 : "gauge";
		batch_add(b, t, source, o->name, gpu, labels, kind, o->value,
			  o->kind == PROMAP_HISTOGRAM ? histogram_detail(o) : NULL);
		free(labels);
		src->samples++;
	}
	src->ok = 1;
	promap_list_release(&l);
	prom_doc_release(&doc);
}

/* --- the thread ------------------------------------------------------------------- */

/* Every source keeps its own schedule (a pass every interval_ms from the
 * start), and the pages' transfers run side by side on one multi handle:
 * a page that stalls holds back only itself, for at most
 * scrape_timeout_ms, never the other sources' samples. */

static struct tbatch *batch_new(const struct collector *c)
{
	struct tbatch *b = xcalloc(1, sizeof *b);
	b->run_id = c->run_id;
	return b;
}

static void batch_post(struct collector *c, struct tbatch *b)
{
	if (b->n || b->ng)
		store_post(c->store, batch_job, b, batch_free);
	else
		batch_free(b);
}

/* A pass of one source: NVML is read at once, a page's transfer queued. */
static void pass_start(struct collector *c, struct source *s, struct tbatch *b)
{
	if (s->kind == SRC_NVML) {
		sample_nvml(c, s, b);
		s->passes++;
	} else {
		scrape_start(c, s);
	}
}

/* Move the transfers along and finish those that ended. */
static void pump(struct collector *c, struct tbatch *b)
{
	int running = 0;
	curl_multi_perform(c->multi, &running);
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle; /* m is gone once the handle is removed */
		CURLcode rc = m->data.result;
		for (int i = 0; i < c->nsrc; i++) {
			struct source *s = &c->src[i];
			if (s->easy != e || !s->busy)
				continue;
			curl_multi_remove_handle(c->multi, e);
			s->busy = 0;
			scrape_done(c, s, rc, b);
			s->passes++;
			break;
		}
	}
}

static int any_busy(const struct collector *c)
{
	for (int i = 0; i < c->nsrc; i++)
		if (c->src[i].busy)
			return 1;
	return 0;
}

/* Until every transfer in flight has ended (each within its timeout). */
static void finish_transfers(struct collector *c, struct tbatch *b)
{
	pump(c, b);
	while (any_busy(c)) {
		curl_multi_poll(c->multi, NULL, 0, 100, NULL);
		pump(c, b);
	}
}

/* A cancelled or interrupted run does not wait for pages still loading:
 * they count as failed passes, and the final pass skips them. */
static void abandon_transfers(struct collector *c)
{
	for (int i = 0; i < c->nsrc; i++) {
		struct source *s = &c->src[i];
		if (!s->busy)
			continue;
		curl_multi_remove_handle(c->multi, s->easy);
		s->busy = 0;
		s->ok = 0;
		s->passes++;
		snprintf(s->detail, sizeof s->detail, "%.200s: no answer before the run ended",
			 s->target);
	}
}

static void set_baseline(struct collector *c)
{
	pthread_mutex_lock(&c->mu);
	c->baseline = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void *collector_main(void *arg)
{
	struct collector *c = arg;
	int64_t period = (int64_t)c->spec->telemetry.interval_ms * 1000000LL;
	int64_t now = mono_ns();
	int baseline = 0;
	for (int i = 0; i < c->nsrc; i++)
		c->src[i].due = now;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		int stop = c->stop, quick = c->quick;
		pthread_mutex_unlock(&c->mu);
		if (stop) {
			if (quick)
				abandon_transfers(c);
			break;
		}
		struct tbatch *b = batch_new(c);
		now = mono_ns();
		for (int i = 0; i < c->nsrc; i++) {
			struct source *s = &c->src[i];
			if (s->busy || s->due > now)
				continue;
			s->due += period;
			if (s->due < now) /* a slow pass: skip ahead instead of bursting */
				s->due = now + period;
			pass_start(c, s, b);
		}
		pump(c, b);
		batch_post(c, b);
		if (!baseline) { /* the first pass of every source is the baseline */
			baseline = 1;
			for (int i = 0; i < c->nsrc; i++)
				baseline &= c->src[i].passes > 0;
			if (baseline)
				set_baseline(c);
		}
		/* until the next source is due, a transfer moves, or stop */
		int64_t next = now + 1000000000LL;
		for (int i = 0; i < c->nsrc; i++)
			if (!c->src[i].busy && c->src[i].due < next)
				next = c->src[i].due;
		int64_t wait = next - mono_ns();
		curl_multi_poll(c->multi, NULL, 0, wait > 0 ? (int)((wait + 999999) / 1000000) : 0,
				NULL);
	}
	/* the final pass, after the last request: what is in flight ends, then
	 * every source once more */
	struct tbatch *b = batch_new(c);
	pthread_mutex_lock(&c->mu);
	int quick = c->quick;
	pthread_mutex_unlock(&c->mu);
	finish_transfers(c, b);
	for (int i = 0; i < c->nsrc; i++)
		if (!quick || c->src[i].ok || !c->src[i].passes)
			pass_start(c, &c->src[i], b);
	finish_transfers(c, b);
	batch_post(c, b);
	set_baseline(c); /* nobody waits past the end */
	return NULL;
}

static void add_source(struct collector *c, int kind, const char *target)
{
	for (int i = 0; i < c->nsrc; i++) /* the same page twice would double-count */
		if (c->src[i].kind == kind && strcmp(c->src[i].target, target) == 0)
			return;
	c->src = xrealloc(c->src, (size_t)(c->nsrc + 1) * sizeof *c->src);
	struct source *s = &c->src[c->nsrc++];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->target = xstrdup(target);
	dynbuf_init(&s->body, HR_MAX_SCRAPE_BYTES);
}

/* The scraper connects only where the allow-list says (docs/security.md,
 * "Targets"): a refused address gets no socket, so nothing is sent. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct source *s = ud;
	char why[sizeof s->refused];
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if (s->allow && !netallow_check(s->allow, &a->addr, s->host, why, sizeof why)) {
		if (!s->refused[0])
			memcpy(s->refused, why, sizeof why);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

static CURL *page_handle(const struct spec *spec, struct source *s)
{
	CURL *e = curl_easy_init();
	if (!e)
		xalloc_die();
	CURLU *u = curl_url();
	char *host = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, s->target, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host)
		s->host = xstrdup(host);
	curl_free(host);
	curl_url_cleanup(u);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, s);
	curl_easy_setopt(e, CURLOPT_URL, s->target);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s->body);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->cerr);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)spec->telemetry.scrape_timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)spec->telemetry.scrape_timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_USERAGENT, "headroomd/" HEADROOM_VERSION " telemetry");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	return e;
}

static void collector_free(struct collector *c)
{
	for (int k = 0; k < c->nsrc; k++) {
		if (c->src[k].easy) {
			if (c->src[k].busy)
				curl_multi_remove_handle(c->multi, c->src[k].easy);
			curl_easy_cleanup(c->src[k].easy);
		}
		dynbuf_release(&c->src[k].body);
		free(c->src[k].target);
		free(c->src[k].host);
	}
	free(c->src);
	curl_multi_cleanup(c->multi);
	nvml_close(c->nvml);
	for (int k = 0; k < c->ngpus; k++) {
		free(c->gpus[k].gpu);
		free(c->gpus[k].uuid);
		free(c->gpus[k].name);
	}
	free(c->gpus);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

struct collector *collector_start(struct store *s, int64_t run_id, const struct spec *spec,
				  const char *nvml_lib, const struct netallow *allow)
{
	struct collector *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->run_id = run_id;
	c->spec = spec;
	/* the daemon's clock anchor, beside the workers' (run_workers) */
	struct clock_args *ca = xcalloc(1, sizeof *ca);
	ca->run_id = run_id;
	ca->mono = mono_ns();
	ca->wall = wall_ns();
	store_post(s, clock_job, ca, free);
	if (spec->telemetry.nvml) {
		char err[HR_ERRLEN];
		if (nvml_open(nvml_lib, &c->nvml, err) < 0) {
			add_source(c, SRC_NVML, nvml_lib ? nvml_lib : HR_NVML_DEFAULT_LIB);
			snprintf(c->src[c->nsrc - 1].detail, HR_ERRLEN, "%s", err);
		} else {
			add_source(c, SRC_NVML, nvml_lib_path(c->nvml));
		}
	}
	size_t i;
	json_t *u;
	json_array_foreach(spec->telemetry.dcgm_urls, i, u)
		add_source(c, SRC_DCGM, json_string_value(u));
	if (spec->telemetry.server_metrics) {
		const char *base = spec->target.url;
		size_t n = strlen(base);
		while (n && base[n - 1] == '/')
			n--;
		char *url = xasprintf("%.*s/metrics", (int)n, base);
		add_source(c, SRC_SERVER, url);
		free(url);
	}
	json_array_foreach(spec->telemetry.metrics_urls, i, u)
		add_source(c, SRC_SERVER, json_string_value(u));

	c->multi = curl_multi_init();
	if (!c->multi)
		xalloc_die();
	for (int k = 0; k < c->nsrc; k++) /* the array no longer moves */
		if (c->src[k].kind != SRC_NVML) {
			c->src[k].allow = allow;
			c->src[k].easy = page_handle(spec, &c->src[k]);
		}
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_mutex_init(&c->mu, NULL);
	if (pthread_create(&c->thread, NULL, collector_main, c) != 0) {
		hlog(LOG_ERROR, "telemetry", "cannot start the telemetry thread\n");
		collector_free(c);
		return NULL;
	}
	return c;
}

int collector_wait_baseline(struct collector *c, int (*give_up)(void *ud), void *ud)
{
	if (!c)
		return 0;
	/* NVML is read and every page fetched at once, each page within the
	 * scrape timeout; the margin is for NVML itself. give_up is asked
	 * every 100 ms (a cancel or a stop does not wait for the baseline). */
	int64_t limit = mono_ns() + (int64_t)c->spec->telemetry.scrape_timeout_ms * 1000000LL +
			BASELINE_MARGIN_NS;
	int done = 0, quit = 0;
	while (!done && !quit) {
		int64_t now = mono_ns(), until = now + 100000000LL;
		if (now >= limit)
			break;
		if (until > limit)
			until = limit;
		struct timespec ts = {(time_t)(until / 1000000000LL),
				      (long)(until % 1000000000LL)};
		pthread_mutex_lock(&c->mu);
		while (!c->baseline && pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
			;
		done = c->baseline;
		pthread_mutex_unlock(&c->mu);
		quit = !done && give_up && give_up(ud);
	}
	if (quit)
		return -1;
	if (!done)
		hlog(LOG_INFO, "telemetry", "run %lld: the telemetry baseline is late; starting "
				"without waiting longer\n",
			(long long)c->run_id);
	return done ? 0 : -1;
}

void collector_stop(struct collector *c, int quick)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	c->quick = quick;
	pthread_mutex_unlock(&c->mu);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	post_sources(c);
	collector_free(c);
}
