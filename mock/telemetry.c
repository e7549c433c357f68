/* telemetry.c - headroom-mock's telemetry: Prometheus text exposition (format
 * 0.0.4) pages whose values follow the simulated load, for tests of
 * inference-server and GPU telemetry where there is no GPU.
 *
 *   GET /metrics on the main port: vLLM-like, every series labelled
 *     model_name="<--model>": requests running and waiting, KV cache
 *     usage, preemptions (always 0), prompt and generation token
 *     counters, completed requests (by finished_reason: "length", and
 *     "stop" with --early-stop), and histograms of TTFT and of
 *     end-to-end latency.
 *   GET /metrics on --dcgm-listen: DCGM-exporter-like, one series per
 *     simulated GPU (--gpus): utilisation, memory copy utilisation,
 *     power, energy, framebuffer used and free, temperature, clocks.
 *
 * "Active" is the model's `running`: with the load model the sequences
 * holding a batch slot, without it the responses between request and
 * last chunk. It is spread over the GPUs as whole sequences (GPU i gets
 * running / gpus, plus one while i < running % gpus), and a GPU's
 * utilisation is round(100 * min(1, its sequences / saturation)) with
 * saturation --max-batch, else 64. Power follows utilisation; energy is
 * the integral of power over monotonic time since start, accumulated just
 * before every change of `running` (model->load_changed) and at each
 * scrape, so it is exact for the piecewise-constant load.
 *
 * TTFT is observed when a response's first chunk is produced, as the time
 * from the request's arrival to that chunk's due time (the mock's own
 * schedule, not when the client read it); e2e latency when the response
 * completes, to its last chunk's due time. A response with max_tokens 0
 * observes both at its completion. Responses cancelled by a disconnect
 * count in neither the success counter nor e2e.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock.h"
#include "util.h"

/* vLLM's buckets (v0.6) */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                     0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
static const double e2e_bounds[] = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,  2.5, 5.0,
                                    10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0};
_Static_assert(HR_ARRAY_LEN(ttft_bounds) <= MOCK_HIST_BUCKETS &&
                   HR_ARRAY_LEN(e2e_bounds) <= MOCK_HIST_BUCKETS,
               "struct histogram holds MOCK_HIST_BUCKETS bounds");

#define DEFAULT_SATURATION 64 /* sequences that keep a GPU fully busy without --max-batch */
#define IDLE_W 100.0
#define BUSY_W 600.0 /* added at 100% */
#define FB_TOTAL_MIB 80000
#define FB_BASE_MIB 2000.0 /* weights and the rest */
#define FB_KV_MIB 70000.0  /* the KV cache when full */

static void hist_init(struct histogram *h, const double *bounds, unsigned nb)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->nb = nb;
}

static void hist_observe(struct histogram *h, int64_t ns)
{
	double v = ns > 0 ? (double)ns / 1e9 : 0.0;
	unsigned i = 0;
	while (i < h->nb && v > h->bounds[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += v;
}

/* A label value: backslash, double quote and newline escaped. */
static char *label_escape(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += (*p == '\\' || *p == '"' || *p == '\n') ? 2 : 1;
	char *out = xmalloc(n + 1), *q = out;
	for (const char *p = s; *p; p++) {
		if (*p == '\\' || *p == '"' || *p == '\n') {
			*q++ = '\\';
			*q++ = *p == '\n' ? 'n' : *p;
		} else {
			*q++ = *p;
		}
	}
	*q = '\0';
	return out;
}

void tel_init(struct server *srv, int64_t now)
{
	struct telemetry *t = &srv->tel;
	memset(t, 0, sizeof(*t));
	hist_init(&t->ttft, ttft_bounds, HR_ARRAY_LEN(ttft_bounds));
	hist_init(&t->e2e, e2e_bounds, HR_ARRAY_LEN(e2e_bounds));
	t->model_label = label_escape(srv->cfg->model);
	t->gpus = srv->cfg->gpus ? srv->cfg->gpus : 1;
	if (t->gpus > MOCK_MAX_GPUS)
		t->gpus = MOCK_MAX_GPUS;
	t->energy_ns = now;
}

void tel_free(struct server *srv)
{
	free(srv->tel.model_label);
	srv->tel.model_label = NULL;
}

/* ---- the simulated GPUs ---- */

static int gpu_util(const struct server *srv, unsigned gpu)
{
	const struct telemetry *t = &srv->tel;
	uint64_t running = srv->model.running;
	uint64_t share = running / t->gpus + (gpu < running % t->gpus ? 1 : 0);
	double sat = srv->cfg->max_batch ? (double)srv->cfg->max_batch : DEFAULT_SATURATION;
	double f = (double)share / sat;
	return (int)lround(100.0 * (f < 1.0 ? f : 1.0));
}

static double gpu_power_w(int util)
{
	return IDLE_W + BUSY_W * util / 100.0;
}

static double kv_usage(const struct server *srv)
{
	uint64_t cap =
	    srv->cfg->kv_capacity_tokens ? srv->cfg->kv_capacity_tokens : MOCK_DEFAULT_KV_TOKENS;
	double u = (double)srv->model.kv_tokens / (double)cap;
	return u < 1.0 ? u : 1.0;
}

static void integrate(struct server *srv, int64_t now)
{
	struct telemetry *t = &srv->tel;
	if (now <= t->energy_ns)
		return;
	double dt_s = (double)(now - t->energy_ns) / 1e9;
	for (unsigned i = 0; i < t->gpus; i++)
		t->energy_mj[i] += gpu_power_w(gpu_util(srv, i)) * dt_s * 1000.0;
	t->energy_ns = now;
}

void tel_load_changed(void *ctx)
{
	integrate(ctx, mono_ns());
}

/* ---- observations ---- */

void tel_first_chunk(struct server *srv, const struct stream *s, int64_t due)
{
	hist_observe(&srv->tel.ttft, due - s->start_ns);
}

void tel_finished(struct server *srv, const struct stream *s, int64_t due)
{
	hist_observe(&srv->tel.e2e, due - s->start_ns);
	srv->tel.success++;
	if (s->eos)
		srv->tel.stopped++;
}

/* ---- the pages ---- */

/* A sample value the way Python's prometheus_client writes one: the
 * shortest exact decimal, with ".0" on a whole number. */
static void add_value(struct dynbuf *b, double v)
{
	char num[32];
	int n = fmt_double(num, v);
	dynbuf_add(b, num, (size_t)n);
	if (!strpbrk(num, ".eEni"))
		dynbuf_add(b, ".0", 2);
}

static void add_meta(struct dynbuf *b, const char *name, const char *type, const char *help)
{
	dynbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{model_name="..."[,extra]} value */
static void vllm_sample(struct server *srv, struct dynbuf *b, const char *name, const char *extra,
                        double v)
{
	dynbuf_printf(b, "%s{model_name=\"%s\"%s%s} ", name, srv->tel.model_label, extra ? "," : "",
	              extra ? extra : "");
	add_value(b, v);
	dynbuf_add(b, "\n", 1);
}

static void vllm_metric(struct server *srv, struct dynbuf *b, const char *name, const char *type,
                        const char *help, double v)
{
	add_meta(b, name, type, help);
	vllm_sample(srv, b, name, NULL, v);
}

static void vllm_histogram(struct server *srv, struct dynbuf *b, const char *name, const char *help,
                           const struct histogram *h)
{
	char series[128], le[64], num[32];
	add_meta(b, name, "histogram", help);
	snprintf(series, sizeof(series), "%s_bucket", name);
	uint64_t cum = 0;
	for (unsigned i = 0; i <= h->nb; i++) {
		cum += h->bucket[i];
		if (i < h->nb) {
			fmt_double(num, h->bounds[i]);
			snprintf(le, sizeof(le), "le=\"%s%s\"", num,
			         strpbrk(num, ".e") ? "" : ".0");
		} else {
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		}
		vllm_sample(srv, b, series, le, (double)cum);
	}
	snprintf(series, sizeof(series), "%s_count", name);
	vllm_sample(srv, b, series, NULL, (double)h->count);
	snprintf(series, sizeof(series), "%s_sum", name);
	vllm_sample(srv, b, series, NULL, h->sum);
}

void tel_vllm_page(struct server *srv, struct dynbuf *b)
{
	const struct model *m = &srv->model;
	const struct telemetry *t = &srv->tel;
	dynbuf_reset(b);
	vllm_metric(srv, b, "vllm:num_requests_running", "gauge",
	            "Number of requests currently running on GPU.", (double)m->running);
	vllm_metric(srv, b, "vllm:num_requests_waiting", "gauge",
	            "Number of requests waiting to be processed.", (double)m->waiting);
	vllm_metric(srv, b, "vllm:gpu_cache_usage_perc", "gauge",
	            "GPU KV-cache usage. 1 means 100 percent usage.", kv_usage(srv));
	vllm_metric(srv, b, "vllm:num_preemptions_total", "counter",
	            "Cumulative number of preemption from the engine.", 0.0);
	vllm_metric(srv, b, "vllm:prompt_tokens_total", "counter",
	            "Number of prefill tokens processed.", (double)m->prompt_tokens_total);
	vllm_metric(srv, b, "vllm:generation_tokens_total", "counter",
	            "Number of generation tokens processed.", (double)m->generation_tokens_total);
	add_meta(b, "vllm:request_success_total", "counter",
	         "Count of successfully processed requests.");
	vllm_sample(srv, b, "vllm:request_success_total", "finished_reason=\"length\"",
	            (double)(t->success - t->stopped));
	if (srv->cfg->early_stop > 0)
		vllm_sample(srv, b, "vllm:request_success_total", "finished_reason=\"stop\"",
		            (double)t->stopped);
	vllm_histogram(srv, b, "vllm:time_to_first_token_seconds",
	               "Histogram of time to first token in seconds.", &t->ttft);
	vllm_histogram(srv, b, "vllm:e2e_request_latency_seconds",
	               "Histogram of end to end request latency in seconds.", &t->e2e);
}

enum { V_UTIL, V_COPY, V_POWER, V_ENERGY, V_FB_FREE, V_FB_USED, V_TEMP, V_SM, V_MEM };

static const struct dcgm_field {
	const char *name, *type, *help;
	int v;
} dcgm_fields[] = {
    /* the exporter's default-counters.csv order */
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM frequency (in MHz).", V_SM},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory frequency (in MHz).", V_MEM},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", V_TEMP},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", V_POWER},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", V_ENERGY},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", V_UTIL},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", V_COPY},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", V_FB_FREE},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", V_FB_USED},
};

void tel_dcgm_page(struct server *srv, struct dynbuf *b, int64_t now)
{
	struct telemetry *t = &srv->tel;
	integrate(srv, now);
	int util[MOCK_MAX_GPUS];
	for (unsigned i = 0; i < t->gpus; i++)
		util[i] = gpu_util(srv, i);
	long fb_used = lround(FB_BASE_MIB + kv_usage(srv) * FB_KV_MIB);
	dynbuf_reset(b);
	for (size_t f = 0; f < HR_ARRAY_LEN(dcgm_fields); f++) {
		const struct dcgm_field *d = &dcgm_fields[f];
		add_meta(b, d->name, d->type, d->help);
		for (unsigned i = 0; i < t->gpus; i++) {
			dynbuf_printf(b,
			              "%s{gpu=\"%u\",UUID=\"GPU-00000000-mock-0000-0000-%012u\","
			              "device=\"nvidia%u\",modelName=\"NVIDIA H100 80GB HBM3 "
			              "(headroom-mock)\",Hostname=\"headroom-mock\"} ",
			              d->name, i, i, i);
			int u = util[i];
			switch (d->v) {
			case V_UTIL:
				dynbuf_printf(b, "%d\n", u);
				break;
			case V_COPY:
				dynbuf_printf(b, "%d\n", u / 2);
				break;
			case V_POWER:
				dynbuf_printf(b, "%.6f\n", gpu_power_w(u));
				break;
			case V_ENERGY:
				dynbuf_printf(b, "%.0f\n", floor(t->energy_mj[i]));
				break;
			case V_FB_FREE:
				dynbuf_printf(b, "%ld\n", FB_TOTAL_MIB - fb_used);
				break;
			case V_FB_USED:
				dynbuf_printf(b, "%ld\n", fb_used);
				break;
			case V_TEMP:
				dynbuf_printf(b, "%ld\n", lround(35.0 + 40.0 * u / 100.0));
				break;
			case V_SM:
				dynbuf_printf(b, "%d\n", u > 0 ? 1980 : 345);
				break;
			default:
				dynbuf_printf(b, "%d\n", 2619);
				break;
			}
		}
	}
}
