/* promap.c - known metric names to common concepts (see promap.h and
 * docs/prometheus.md for the table and its sources). */
#include "promap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MIB 1048576.0

/* one rule per line reads better than the formatter's layout */
/* clang-format off */

#define G PROMAP_GAUGE
#define C PROMAP_COUNTER
#define H PROMAP_HISTOGRAM

/* metric, sel_label, sel_value, concept, kind, op, scale, other,
 * other_sel_value, unless, unless_sel_value, source, flags */
#define DIRECT(m, concept, kind, scale, src)                                                       \
	{m, NULL, NULL, concept, kind, PROMAP_DIRECT, scale, NULL, NULL, NULL, NULL, src, 0}
#define DIRECT_UNLESS(m, concept, kind, unless, src)                                               \
	{m, NULL, NULL, concept, kind, PROMAP_DIRECT, 1, NULL, NULL, unless, NULL, src, 0}
#define DCGM(m, concept, kind, scale)                                                              \
	{m, NULL, NULL, concept, kind, PROMAP_DIRECT, scale, NULL, NULL, NULL, NULL, "dcgm",       \
	 PROMAP_F_NO_MIG}
#define SELECT(m, label, value, concept, src)                                                      \
	{m, label, value, concept, G, PROMAP_DIRECT, 1, NULL, NULL, NULL, NULL, src, 0}

const struct promap_rule promap_rules[] = {
	/* DCGM exporter (dcgm-exporter default-counters.csv) */
	DCGM("DCGM_FI_DEV_POWER_USAGE", "gpu.power_w", G, 1),
	DCGM("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gpu.energy_j", C, 1e-3),
	DCGM("DCGM_FI_DEV_GPU_UTIL", "gpu.util_pct", G, 1),
	DCGM("DCGM_FI_DEV_MEM_COPY_UTIL", "gpu.mem_util_pct", G, 1),
	DCGM("DCGM_FI_DEV_FB_USED", "gpu.mem_used_bytes", G, MIB),
	DCGM("DCGM_FI_DEV_FB_TOTAL", "gpu.mem_total_bytes", G, MIB),
	{"DCGM_FI_DEV_FB_USED", NULL, NULL, "gpu.mem_total_bytes", G, PROMAP_SUM, MIB,
	 "DCGM_FI_DEV_FB_FREE", NULL, "DCGM_FI_DEV_FB_TOTAL", NULL, "dcgm", PROMAP_F_NO_MIG},
	DCGM("DCGM_FI_DEV_GPU_TEMP", "gpu.temp_c", G, 1),
	DCGM("DCGM_FI_DEV_SM_CLOCK", "gpu.sm_clock_mhz", G, 1),
	DCGM("DCGM_FI_DEV_MEM_CLOCK", "gpu.mem_clock_mhz", G, 1),

	/* Triton Inference Server GPU metrics (label gpu_uuid) */
	DIRECT("nv_gpu_utilization", "gpu.util_pct", G, 100, "triton"),
	DIRECT("nv_gpu_memory_used_bytes", "gpu.mem_used_bytes", G, 1, "triton"),
	DIRECT("nv_gpu_memory_total_bytes", "gpu.mem_total_bytes", G, 1, "triton"),
	DIRECT("nv_gpu_power_usage", "gpu.power_w", G, 1, "triton"),
	DIRECT("nv_energy_consumption", "gpu.energy_j", C, 1, "triton"),

	/* vLLM */
	DIRECT("vllm:num_requests_running", "server.requests_running", G, 1, "vllm"),
	DIRECT("vllm:num_requests_waiting", "server.requests_waiting", G, 1, "vllm"),
	DIRECT("vllm:kv_cache_usage_perc", "server.kv_cache_usage", G, 1, "vllm"),
	DIRECT_UNLESS("vllm:gpu_cache_usage_perc", "server.kv_cache_usage", G,
		      "vllm:kv_cache_usage_perc", "vllm"),
	DIRECT("vllm:gpu_prefix_cache_hit_rate", "server.prefix_cache_hit_rate", G, 1, "vllm"),
	{"vllm:prefix_cache_hits_total", NULL, NULL, "server.prefix_cache_hit_rate", G,
	 PROMAP_RATIO, 1, "vllm:prefix_cache_queries_total", NULL, NULL, NULL, "vllm", 0},
	{"vllm:gpu_prefix_cache_hits_total", NULL, NULL, "server.prefix_cache_hit_rate", G,
	 PROMAP_RATIO, 1, "vllm:gpu_prefix_cache_queries_total", NULL,
	 "vllm:prefix_cache_hits_total", NULL, "vllm", 0},
	DIRECT("vllm:num_preemptions_total", "server.preemptions_total", C, 1, "vllm"),
	DIRECT("vllm:prompt_tokens_total", "server.prompt_tokens_total", C, 1, "vllm"),
	DIRECT("vllm:generation_tokens_total", "server.generation_tokens_total", C, 1, "vllm"),
	DIRECT("vllm:time_to_first_token_seconds", "server.ttft_seconds", H, 1, "vllm"),
	DIRECT("vllm:inter_token_latency_seconds", "server.itl_seconds", H, 1, "vllm"),
	DIRECT_UNLESS("vllm:time_per_output_token_seconds", "server.itl_seconds", H,
		      "vllm:inter_token_latency_seconds", "vllm"),
	DIRECT("vllm:request_time_per_output_token_seconds", "server.tpot_seconds", H, 1, "vllm"),
	DIRECT("vllm:e2e_request_latency_seconds", "server.e2e_latency_seconds", H, 1, "vllm"),
	DIRECT("vllm:request_queue_time_seconds", "server.queue_time_seconds", H, 1, "vllm"),

	/* SGLang */
	DIRECT("sglang:num_running_reqs", "server.requests_running", G, 1, "sglang"),
	DIRECT("sglang:num_queue_reqs", "server.requests_waiting", G, 1, "sglang"),
	DIRECT("sglang:token_usage", "server.kv_cache_usage", G, 1, "sglang"),
	DIRECT("sglang:cache_hit_rate", "server.prefix_cache_hit_rate", G, 1, "sglang"),
	DIRECT("sglang:num_retracted_requests_total", "server.preemptions_total", C, 1, "sglang"),
	DIRECT("sglang:prompt_tokens_total", "server.prompt_tokens_total", C, 1, "sglang"),
	DIRECT("sglang:generation_tokens_total", "server.generation_tokens_total", C, 1,
	       "sglang"),
	DIRECT("sglang:time_to_first_token_seconds", "server.ttft_seconds", H, 1, "sglang"),
	DIRECT("sglang:inter_token_latency_seconds", "server.itl_seconds", H, 1, "sglang"),
	DIRECT_UNLESS("sglang:time_per_output_token_seconds", "server.itl_seconds", H,
		      "sglang:inter_token_latency_seconds", "sglang"),
	DIRECT("sglang:e2e_request_latency_seconds", "server.e2e_latency_seconds", H, 1,
	       "sglang"),
	DIRECT("sglang:queue_time_seconds", "server.queue_time_seconds", H, 1, "sglang"),

	/* Text Generation Inference (durations in seconds) */
	DIRECT("tgi_batch_current_size", "server.requests_running", G, 1, "tgi"),
	DIRECT("tgi_queue_size", "server.requests_waiting", G, 1, "tgi"),
	DIRECT("tgi_request_duration", "server.e2e_latency_seconds", H, 1, "tgi"),
	DIRECT("tgi_request_queue_duration", "server.queue_time_seconds", H, 1, "tgi"),
	DIRECT("tgi_request_mean_time_per_token_duration", "server.tpot_seconds", H, 1, "tgi"),

	/* TensorRT-LLM through Triton's tensorrtllm backend */
	SELECT("nv_trt_llm_request_metrics", "request_type", "active", "server.requests_running",
	       "trtllm"),
	SELECT("nv_trt_llm_request_metrics", "request_type", "waiting", "server.requests_waiting",
	       "trtllm"),
	SELECT("nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", "fraction",
	       "server.kv_cache_usage", "trtllm"),
	{"nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", "used",
	 "server.kv_cache_usage", G, PROMAP_RATIO, 1, "nv_trt_llm_kv_cache_block_metrics", "max",
	 "nv_trt_llm_kv_cache_block_metrics", "fraction", "trtllm", 0},
};

#undef G
#undef C
#undef H
#undef DIRECT
#undef DIRECT_UNLESS
#undef DCGM
#undef SELECT

/* clang-format on */

const size_t promap_rules_count = HR_ARRAY_LEN(promap_rules);

static int selects(const struct promap_rule *r, const struct prom_sample *s)
{
	if (!r->sel_label)
		return 1;
	if (!s)
		return 0;
	const char *v = prom_label(s, r->sel_label);
	return v && strcmp(v, r->sel_value) == 0;
}

const struct promap_rule *promap_lookup(const char *metric, const struct prom_sample *s)
{
	for (size_t i = 0; i < promap_rules_count; i++) {
		const struct promap_rule *r = &promap_rules[i];
		if (r->op == PROMAP_DIRECT && strcmp(r->metric, metric) == 0 && selects(r, s))
			return r;
	}
	return NULL;
}

/* ---- collecting ---- */

/* Samples of the `other` family of a derived rule, sorted by label hash
 * (the selector label left out), for pairing in O(log n). */
struct pidx {
	uint64_t h;
	const struct prom_sample *s;
};

struct collector {
	const struct prom_doc *doc;
	struct promap_list *out;
	size_t cap;
	signed char *active; /* per rule: -1 unknown, 0 stepped aside, 1 active */
	struct pidx **idx;   /* per derived rule: its partner index, built on demand */
	size_t *nidx;
};

static int cmp_pidx(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;
	return x->h < y->h ? -1 : x->h > y->h;
}

static int rule_active(struct collector *c, size_t ri)
{
	const struct promap_rule *r = &promap_rules[ri];
	if (c->active[ri] < 0) {
		int on = 1;
		if (r->unless) {
			const struct prom_family *f = prom_find_family(c->doc, r->unless);
			if (f && f->nsamples) {
				if (!r->unless_sel_value) {
					on = 0;
				} else {
					struct prom_label m = {r->sel_label, r->unless_sel_value};
					on = prom_find_sample(f, NULL, &m, 1) == NULL;
				}
			}
		}
		c->active[ri] = (signed char)on;
	}
	return c->active[ri];
}

static const struct prom_sample *partner(struct collector *c, size_t ri,
                                         const struct prom_sample *s)
{
	const struct promap_rule *r = &promap_rules[ri];
	if (!c->idx[ri]) {
		const struct prom_family *f = prom_find_family(c->doc, r->other);
		size_t n = 0;
		c->idx[ri] = xmalloc(((f ? f->nsamples : 0) + 1) * sizeof(struct pidx));
		for (size_t i = 0; f && i < f->nsamples; i++) {
			const struct prom_sample *t = &f->samples[i];
			if (t->role != PROM_ROLE_VALUE)
				continue;
			if (r->sel_label && r->other_sel_value) {
				const char *v = prom_label(t, r->sel_label);
				if (!v || strcmp(v, r->other_sel_value) != 0)
					continue;
			}
			c->idx[ri][n].h = prom_labels_hash(t, r->sel_label);
			c->idx[ri][n].s = t;
			n++;
		}
		qsort(c->idx[ri], n, sizeof(struct pidx), cmp_pidx);
		c->nidx[ri] = n;
	}
	uint64_t h = prom_labels_hash(s, r->sel_label);
	size_t lo = 0, hi = c->nidx[ri];
	while (lo < hi) { /* first entry with hash >= h */
		size_t mid = lo + (hi - lo) / 2;
		if (c->idx[ri][mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->nidx[ri] && c->idx[ri][lo].h == h; lo++)
		if (prom_labels_equal(s, c->idx[ri][lo].s, r->sel_label))
			return c->idx[ri][lo].s;
	return NULL;
}

static int gpu_index(const struct prom_sample *s)
{
	const char *v = prom_label(s, "gpu");
	long n = 0;
	if (!v || !*v || strlen(v) > 9)
		return -1;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (*p - '0');
	}
	return (int)n;
}

static struct promap_obs *push(struct collector *c, const char *name, const struct promap_rule *r,
                               int kind, const struct prom_sample *s, double value)
{
	struct promap_list *l = c->out;
	if (l->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		l->obs = xrealloc(l->obs, c->cap * sizeof(*l->obs));
	}
	struct promap_obs *o = &l->obs[l->n++];
	const char *uuid = prom_label(s, "UUID");
	const char *model = prom_label(s, "model_name");
	o->name = name;
	o->concept = r ? r->concept : NULL;
	o->source = r ? r->source : NULL;
	o->kind = kind;
	o->gpu_index = gpu_index(s);
	o->gpu_uuid = uuid ? uuid : prom_label(s, "gpu_uuid");
	o->gpu_model = prom_label(s, "modelName");
	o->model = model ? model : prom_label(s, "model");
	o->value = value;
	o->sum = o->count = NAN;
	o->buckets = NULL;
	o->nbuckets = 0;
	o->sample = s;
	return o;
}

static void push_group(struct collector *c, const char *name, const struct promap_rule *r,
                       const struct prom_group *g)
{
	struct promap_obs *o = push(c, name, r, PROMAP_HISTOGRAM, g->first, g->count);
	o->sum = g->sum;
	o->count = g->count;
	o->buckets = g->buckets;
	o->nbuckets = g->nbuckets;
}

static int is_mig(const struct prom_sample *s)
{
	const char *v = prom_label(s, "GPU_I_ID");
	return v && *v;
}

static void do_family(struct collector *c, const struct prom_family *f, unsigned flags)
{
	size_t rules[16], nr = 0;
	int raw = !(flags & PROMAP_MAPPED_ONLY);

	for (size_t i = 0; i < promap_rules_count && nr < HR_ARRAY_LEN(rules); i++)
		if (strcmp(promap_rules[i].metric, f->name) == 0 && rule_active(c, i))
			rules[nr++] = i;

	if (f->type == PROM_HISTOGRAM) {
		const struct promap_rule *hr = NULL;
		for (size_t k = 0; k < nr && !hr; k++)
			if (promap_rules[rules[k]].kind == PROMAP_HISTOGRAM)
				hr = &promap_rules[rules[k]];
		if (!hr && !raw)
			return;
		for (size_t g = 0; g < f->ngroups; g++)
			push_group(c, hr ? hr->concept : f->name, hr, &f->groups[g]);
		return;
	}
	if (f->type == PROM_SUMMARY) {
		if (!raw)
			return;
		for (size_t i = 0; i < f->nsamples; i++) {
			const struct prom_sample *s = &f->samples[i];
			int kind = s->role == PROM_ROLE_QUANTILE ? PROMAP_GAUGE : PROMAP_COUNTER;
			push(c, s->name, NULL, kind, s, s->value);
		}
		return;
	}
	for (size_t i = 0; i < f->nsamples; i++) {
		const struct prom_sample *s = &f->samples[i];
		int mapped = 0;
		for (size_t k = 0; k < nr; k++) {
			const struct promap_rule *r = &promap_rules[rules[k]];
			if (r->kind == PROMAP_HISTOGRAM || !selects(r, s))
				continue;
			if ((r->flags & PROMAP_F_NO_MIG) && is_mig(s))
				continue;
			if (r->op == PROMAP_DIRECT) {
				push(c, r->concept, r, r->kind, s, s->value * r->scale);
				mapped = 1;
				continue;
			}
			const struct prom_sample *t = partner(c, rules[k], s);
			if (!t)
				continue;
			if (r->op == PROMAP_SUM)
				push(c, r->concept, r, r->kind, s,
				     (s->value + t->value) * r->scale);
			else if (t->value > 0)
				push(c, r->concept, r, r->kind, s, s->value / t->value * r->scale);
		}
		if (!mapped && raw)
			push(c, s->name, NULL,
			     f->type == PROM_COUNTER ? PROMAP_COUNTER : PROMAP_GAUGE, s, s->value);
	}
}

size_t promap_collect(const struct prom_doc *doc, unsigned flags, struct promap_list *out)
{
	struct collector c;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.doc = doc;
	c.out = out;
	c.active = xmalloc(promap_rules_count);
	memset(c.active, -1, promap_rules_count);
	c.idx = xcalloc(promap_rules_count, sizeof(*c.idx));
	c.nidx = xcalloc(promap_rules_count, sizeof(*c.nidx));
	for (size_t i = 0; i < doc->nfamilies; i++)
		do_family(&c, &doc->families[i], flags);
	for (size_t i = 0; i < promap_rules_count; i++)
		free(c.idx[i]);
	free(c.idx);
	free(c.nidx);
	free(c.active);
	return out->n;
}

void promap_list_release(struct promap_list *l)
{
	free(l->obs);
	l->obs = NULL;
	l->n = 0;
}

const struct promap_obs *promap_find(const struct promap_list *l, const char *name,
                                     const char *gpu_uuid)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct promap_obs *o = &l->obs[i];
		if (strcmp(o->name, name) != 0)
			continue;
		if (gpu_uuid && (!o->gpu_uuid || strcmp(o->gpu_uuid, gpu_uuid) != 0))
			continue;
		return o;
	}
	return NULL;
}
