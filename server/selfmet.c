/* selfmet.c - the daemon's own metrics (see selfmet.h). */
#include "selfmet.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "dynbuf.h"
#include "runs.h"
#include "util.h"

/* latency buckets, seconds (Prometheus' le, +Inf implied) */
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				 0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NB (sizeof buckets / sizeof buckets[0])

struct hist {
	unsigned long long le[NB], count;
	double sum;
};

static void hist_add(struct hist *h, double v)
{
	for (size_t i = 0; i < NB; i++)
		if (v <= buckets[i])
			h->le[i]++;
	h->count++;
	h->sum += v;
}

#define MAX_SERIES 256 /* (route, method, code) triples kept; more go to "other" */

struct http_series {
	char route[64], method[8];
	unsigned code;
	unsigned long long n;
};
struct route_lat {
	char route[64];
	struct hist h;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct http_series series[MAX_SERIES];
static int nseries;
static struct route_lat lat[MAX_SERIES];
static int nlat;
static struct hist commits;
static unsigned long long commit_failures;
static atomic_llong records;
static atomic_int workers;
static atomic_llong runner_tick_ns;

void selfmet_http(const char *route, const char *method, unsigned status, double seconds)
{
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < nseries && !(series[i].code == status && strcmp(series[i].route, route) == 0 &&
				strcmp(series[i].method, method) == 0))
		i++;
	if (i == nseries && nseries < MAX_SERIES) {
		snprintf(series[i].route, sizeof series[i].route, "%s", route);
		snprintf(series[i].method, sizeof series[i].method, "%s", method);
		series[i].code = status;
		nseries++;
	}
	if (i < nseries)
		series[i].n++;
	int k = 0;
	while (k < nlat && strcmp(lat[k].route, route) != 0)
		k++;
	if (k == nlat && nlat < MAX_SERIES) {
		snprintf(lat[k].route, sizeof lat[k].route, "%s", route);
		nlat++;
	}
	if (k < nlat)
		hist_add(&lat[k].h, seconds);
	pthread_mutex_unlock(&mu);
}

void selfmet_commit(int ok, double seconds)
{
	pthread_mutex_lock(&mu);
	if (ok)
		hist_add(&commits, seconds);
	else
		commit_failures++;
	pthread_mutex_unlock(&mu);
}

void selfmet_records(long long n)
{
	atomic_fetch_add(&records, n);
}

void selfmet_workers(int alive)
{
	atomic_store(&workers, alive);
}

void selfmet_runner_tick(void)
{
	atomic_store(&runner_tick_ns, mono_ns());
}

double selfmet_runner_idle_s(void)
{
	long long t = atomic_load(&runner_tick_ns);
	return t ? (double)(mono_ns() - t) / 1e9 : 1e9;
}

static void head(struct dynbuf *b, const char *name, const char *type, const char *help)
{
	dynbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* a label value, escaped as the text format wants */
static void label(struct dynbuf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			dynbuf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			dynbuf_addstr(b, "\\n");
		else
			dynbuf_add(b, v, 1);
	}
}

static void hist_lines(struct dynbuf *b, const char *name, const char *lbl, const struct hist *h)
{
	for (size_t i = 0; i < NB; i++)
		dynbuf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, lbl, *lbl ? "," : "",
			      buckets[i], h->le[i]);
	dynbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lbl, *lbl ? "," : "",
		      h->count);
	dynbuf_printf(b, "%s_sum%s%s%s %.9g\n", name, *lbl ? "{" : "", lbl, *lbl ? "}" : "",
		      h->sum);
	dynbuf_printf(b, "%s_count%s%s%s %llu\n", name, *lbl ? "{" : "", lbl, *lbl ? "}" : "",
		      h->count);
}

char *selfmet_render(struct store *s)
{
	struct dynbuf b;
	dynbuf_init(&b, (size_t)8 << 20);
	head(&b, "headroom_build_info", "gauge", "The build: version and commit (value 1).");
	dynbuf_printf(&b, "headroom_build_info{version=\"%s\",commit=\"%s\"} 1\n", HEADROOM_VERSION,
		      HEADROOM_COMMIT);
	static const char *const states[] = {"queued",    "running",     "succeeded", "failed",
					     "cancelled", "interrupted"};
	long long by_state[6] = {0};
	int have_runs = runs_count_by_state(s, states, 6, by_state) == 0;
	if (have_runs) {
		head(&b, "headroom_runs", "gauge", "Runs in the store by state.");
		for (int i = 0; i < 6; i++)
			dynbuf_printf(&b, "headroom_runs{state=\"%s\"} %lld\n", states[i], by_state[i]);
	}
	head(&b, "headroom_records_ingested_total", "counter",
	     "Records received from workers and passed to the store since start.");
	dynbuf_printf(&b, "headroom_records_ingested_total %lld\n", atomic_load(&records));
	head(&b, "headroom_store_queue_jobs", "gauge",
	     "Jobs waiting for the store's writer (record batches, state changes).");
	dynbuf_printf(&b, "headroom_store_queue_jobs %d\n", store_queue_len(s));
	head(&b, "headroom_workers_alive", "gauge", "Workers of the run in progress that are alive.");
	dynbuf_printf(&b, "headroom_workers_alive %d\n", atomic_load(&workers));
	char err[HR_ERRLEN];
	long long free_mb = disk_free_mb(err);
	if (free_mb >= 0) {
		head(&b, "headroom_data_free_bytes", "gauge", "Free space on the data directory.");
		dynbuf_printf(&b, "headroom_data_free_bytes %lld\n", free_mb * 1048576LL);
	}
	head(&b, "headroom_runner_idle_seconds", "gauge",
	     "Seconds since the run loop last showed it was alive (readiness fails past 300).");
	dynbuf_printf(&b, "headroom_runner_idle_seconds %.3f\n", selfmet_runner_idle_s());
	pthread_mutex_lock(&mu);
	head(&b, "headroom_store_commit_duration_seconds", "histogram",
	     "Store writer transactions that committed, by duration.");
	hist_lines(&b, "headroom_store_commit_duration_seconds", "", &commits);
	head(&b, "headroom_store_commit_failures_total", "counter",
	     "Store writer transactions whose commit failed (a full disk, an I/O error).");
	dynbuf_printf(&b, "headroom_store_commit_failures_total %llu\n", commit_failures);
	head(&b, "headroom_http_requests_total", "counter",
	     "HTTP requests answered, by route pattern, method and status code.");
	for (int i = 0; i < nseries; i++) {
		dynbuf_addstr(&b, "headroom_http_requests_total{route=\"");
		label(&b, series[i].route);
		dynbuf_printf(&b, "\",method=\"%s\",code=\"%u\"} %llu\n", series[i].method,
			      series[i].code, series[i].n);
	}
	head(&b, "headroom_http_request_duration_seconds", "histogram",
	     "HTTP requests by route pattern and duration, from the request to the last byte.");
	for (int i = 0; i < nlat; i++) {
		struct dynbuf l;
		dynbuf_init(&l, 256);
		dynbuf_addstr(&l, "route=\"");
		label(&l, lat[i].route);
		dynbuf_addstr(&l, "\"");
		hist_lines(&b, "headroom_http_request_duration_seconds", l.data ? l.data : "",
			   &lat[i].h);
		dynbuf_release(&l);
	}
	pthread_mutex_unlock(&mu);
	char *out = dynbuf_take(&b, NULL);
	return out ? out : xstrdup("");
}
