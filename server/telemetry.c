/* telemetry.c - the per-run telemetry collector thread (see telemetry.h). */
#include "telemetry.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynbuf.h"
#include "limits.h"
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
};

struct collector {
	struct store *store;
	int64_t run_id;
	const struct spec *spec;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	struct nvml *nvml;
	CURL *curl;
	struct dynbuf body;
	struct source *src;
	int nsrc;
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
	src->ok = 1;
	for (int i = 0; i < n; i++) {
		char idx[16];
		snprintf(idx, sizeof idx, "%d", g[i].index);
		const char *gpu = (g[i].valid & HR_NVML_UUID) ? g[i].uuid : idx;
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

static void scrape(struct collector *c, struct source *src, struct tbatch *b)
{
	dynbuf_reset(&c->body);
	curl_easy_setopt(c->curl, CURLOPT_URL, src->target);
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, cerr);
	CURLcode rc = curl_easy_perform(c->curl);
	int64_t t = wall_ns();
	long status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		snprintf(src->detail, sizeof src->detail, "%.120s: %.120s", src->target,
			 cerr[0] ? cerr : curl_easy_strerror(rc));
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
	if (prom_parse(c->body.data ? c->body.data : "", c->body.len, 0, &doc, err) < 0) {
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

static void pass(struct collector *c)
{
	struct tbatch *b = xcalloc(1, sizeof *b);
	b->run_id = c->run_id;
	for (int i = 0; i < c->nsrc; i++) {
		if (c->src[i].kind == SRC_NVML)
			sample_nvml(c, &c->src[i], b);
		else
			scrape(c, &c->src[i], b);
	}
	if (b->n)
		store_post(c->store, batch_job, b, batch_free);
	else
		batch_free(b);
}

static void *collector_main(void *arg)
{
	struct collector *c = arg;
	int64_t period = (int64_t)c->spec->telemetry.interval_ms * 1000000LL;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		pthread_mutex_unlock(&c->mu);
		pass(c);
		pthread_mutex_lock(&c->mu);
		int64_t ns = (int64_t)next.tv_sec * 1000000000LL + next.tv_nsec + period;
		int64_t now = mono_ns();
		if (ns < now) /* a slow pass: skip ahead instead of bursting */
			ns = now + period;
		next.tv_sec = (time_t)(ns / 1000000000LL);
		next.tv_nsec = (long)(ns % 1000000000LL);
		while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &next) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&c->mu);
	pass(c); /* the final pass, after the last request */
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
}

struct collector *collector_start(struct store *s, int64_t run_id, const struct spec *spec,
				  const char *nvml_lib)
{
	struct collector *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->run_id = run_id;
	c->spec = spec;
	dynbuf_init(&c->body, HR_MAX_SCRAPE_BYTES);
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

	c->curl = curl_easy_init();
	if (!c->curl)
		xalloc_die();
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->body);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)spec->telemetry.scrape_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)spec->telemetry.scrape_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "headroomd/0.1.0 telemetry");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->mu, NULL);
	if (pthread_create(&c->thread, NULL, collector_main, c) != 0) {
		fprintf(stderr, "headroomd: cannot start the telemetry thread\n");
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		curl_easy_cleanup(c->curl);
		nvml_close(c->nvml);
		for (int k = 0; k < c->nsrc; k++)
			free(c->src[k].target);
		free(c->src);
		dynbuf_release(&c->body);
		free(c);
		return NULL;
	}
	return c;
}

void collector_stop(struct collector *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	post_sources(c);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	curl_easy_cleanup(c->curl);
	nvml_close(c->nvml);
	for (int k = 0; k < c->nsrc; k++)
		free(c->src[k].target);
	free(c->src);
	dynbuf_release(&c->body);
	free(c);
}
