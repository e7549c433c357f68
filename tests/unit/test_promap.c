/* test_promap.c - unit tests of lib/promap.c: the rule table, lookups, and
 * the observations of each exporter page in tests/unit/data/prom/ (DCGM,
 * vLLM, SGLang, TGI, TensorRT-LLM/Triton) with their unit conversions,
 * derived concepts, preferred names and raw pass-through. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "prom.h"
#include "promap.h"
#include "promdata.h"
#include "tap.h"
#include "util.h"

/* Parses (strictly) and maps text; returns 0 on success. */
static int load_text(const char *text, size_t len, unsigned flags, struct prom_doc *doc,
                     struct promap_list *l)
{
	char err[HR_ERRLEN];
	if (prom_parse(text, len, PROM_STRICT, doc, err) != 0) {
		tap_ok(0, "parse: %s", err);
		return -1;
	}
	promap_collect(doc, flags, l);
	return 0;
}

static int load(const char *file, unsigned flags, struct prom_doc *doc, struct promap_list *l)
{
	size_t len;
	char *text = read_data(file, &len);
	if (!text)
		return -1;
	int rc = load_text(text, len, flags, doc, l);
	free(text);
	return rc;
}

static size_t count_named(const struct promap_list *l, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += strcmp(l->obs[i].name, name) == 0;
	return n;
}

/* The observation named `name` on GPU `uuid` (any when NULL): must exist. */
static const struct promap_obs *get(const struct promap_list *l, const char *name, const char *uuid)
{
	const struct promap_obs *o = promap_find(l, name, uuid);
	tap_ok(o != NULL, "observation %s (gpu %s) missing", name, uuid ? uuid : "-");
	return o;
}

static void check_value(const struct promap_list *l, const char *name, const char *uuid, int kind,
                        double want)
{
	const struct promap_obs *o = get(l, name, uuid);
	if (!o)
		return;
	tap_ok(o->kind == kind, "%s: kind %d, want %d", name, o->kind, kind);
	tap_ok(fabs(o->value - want) <= 1e-9 * fmax(1, fabs(want)), "%s: value %.17g, want %.17g",
	       name, o->value, want);
}

static void test_rules(void)
{
	static const char *const concepts[] = {
	    "gpu.power_w",
	    "gpu.energy_j",
	    "gpu.util_pct",
	    "gpu.mem_util_pct",
	    "gpu.mem_used_bytes",
	    "gpu.mem_total_bytes",
	    "gpu.temp_c",
	    "gpu.sm_clock_mhz",
	    "gpu.mem_clock_mhz",
	    "server.requests_running",
	    "server.requests_waiting",
	    "server.kv_cache_usage",
	    "server.prefix_cache_hit_rate",
	    "server.preemptions_total",
	    "server.prompt_tokens_total",
	    "server.generation_tokens_total",
	    "server.ttft_seconds",
	    "server.itl_seconds",
	    "server.tpot_seconds",
	    "server.e2e_latency_seconds",
	    "server.queue_time_seconds",
	};
	CHECK(promap_rules_count > 40);
	for (size_t i = 0; i < promap_rules_count; i++) {
		const struct promap_rule *r = &promap_rules[i];
		int known = 0;
		for (size_t k = 0; k < HR_ARRAY_LEN(concepts); k++)
			known |= strcmp(r->concept, concepts[k]) == 0;
		tap_ok(known, "rule %zu: unknown concept %s", i, r->concept);
		tap_ok(r->metric && r->source, "rule %zu: metric and source", i);
		tap_ok(!r->sel_label == !r->sel_value, "rule %zu: selector half set", i);
		if (r->kind == PROMAP_HISTOGRAM)
			tap_ok(r->op == PROMAP_DIRECT && r->scale == 1,
			       "rule %zu: histograms map directly, unscaled", i);
		if (r->op != PROMAP_DIRECT)
			tap_ok(r->other != NULL, "rule %zu: derived rule without other", i);
		tap_ok(strncmp(r->concept, "server.", 7) == 0 ||
		           strncmp(r->concept, "gpu.", 4) == 0,
		       "rule %zu: concept namespace", i);
		size_t cl = strlen(r->concept);
		int total = cl > 6 && strcmp(r->concept + cl - 6, "_total") == 0;
		tap_ok(total == (r->kind == PROMAP_COUNTER) ||
		           strcmp(r->concept, "gpu.energy_j") == 0,
		       "rule %zu: counters end in _total", i);
	}
	/* every concept has at least one rule */
	for (size_t k = 0; k < HR_ARRAY_LEN(concepts); k++) {
		int found = 0;
		for (size_t i = 0; i < promap_rules_count; i++)
			found |= strcmp(promap_rules[i].concept, concepts[k]) == 0;
		tap_ok(found, "no rule for %s", concepts[k]);
	}

	const struct promap_rule *r = promap_lookup("DCGM_FI_DEV_FB_USED", NULL);
	CHECK(r && strcmp(r->concept, "gpu.mem_used_bytes") == 0 && r->op == PROMAP_DIRECT);
	CHECK(r && r->scale == 1048576.0);
	r = promap_lookup("vllm:time_to_first_token_seconds", NULL);
	CHECK(r && strcmp(r->concept, "server.ttft_seconds") == 0 && r->kind == PROMAP_HISTOGRAM);
	CHECK(promap_lookup("DCGM_FI_DEV_FB_FREE", NULL) == NULL);
	CHECK(promap_lookup("vllm:request_success_total", NULL) == NULL);
	CHECK(promap_lookup("no_such_metric", NULL) == NULL);
	CHECK(promap_lookup("", NULL) == NULL);
	/* selector rules need a sample */
	CHECK(promap_lookup("nv_trt_llm_request_metrics", NULL) == NULL);
	struct prom_doc doc;
	char err[HR_ERRLEN];
	CHECK_EQ_INT(prom_parse("x{request_type=\"active\"} 1\nx{request_type=\"max\"} 2\n"
	                        "x{request_type=\"waiting\"} 3\n",
	                        strlen("x{request_type=\"active\"} 1\nx{request_type=\"max\"} 2\n"
	                               "x{request_type=\"waiting\"} 3\n"),
	                        PROM_STRICT, &doc, err),
	             0);
	const struct prom_sample *s = doc.families[0].samples;
	r = promap_lookup("nv_trt_llm_request_metrics", &s[0]);
	CHECK(r && strcmp(r->concept, "server.requests_running") == 0);
	CHECK(promap_lookup("nv_trt_llm_request_metrics", &s[1]) == NULL);
	r = promap_lookup("nv_trt_llm_request_metrics", &s[2]);
	CHECK(r && strcmp(r->concept, "server.requests_waiting") == 0);
	prom_doc_release(&doc);
}

static const char *const GPU0 = "GPU-5e9f6c1a-3b2d-4c8e-9f10-2a7b6c5d4e3f";
static const char *const GPU1 = "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789";

static void test_dcgm(void)
{
	struct prom_doc doc;
	struct promap_list l;

	if (load("dcgm.txt", 0, &doc, &l) != 0)
		return;
	check_value(&l, "gpu.power_w", GPU0, PROMAP_GAUGE, 312.455);
	check_value(&l, "gpu.power_w", GPU1, PROMAP_GAUGE, 69.871);
	/* mJ -> J */
	check_value(&l, "gpu.energy_j", GPU0, PROMAP_COUNTER, 118800123.456);
	check_value(&l, "gpu.energy_j", GPU1, PROMAP_COUNTER, 96012345.678);
	check_value(&l, "gpu.util_pct", GPU0, PROMAP_GAUGE, 87);
	check_value(&l, "gpu.mem_util_pct", GPU0, PROMAP_GAUGE, 41);
	/* MiB -> bytes; total = used + free */
	check_value(&l, "gpu.mem_used_bytes", GPU0, PROMAP_GAUGE, 77066.0 * 1048576);
	check_value(&l, "gpu.mem_total_bytes", GPU0, PROMAP_GAUGE, (77066.0 + 4123) * 1048576);
	check_value(&l, "gpu.mem_used_bytes", GPU1, PROMAP_GAUGE, 646.0 * 1048576);
	check_value(&l, "gpu.mem_total_bytes", GPU1, PROMAP_GAUGE, (646.0 + 80543) * 1048576);
	check_value(&l, "gpu.temp_c", GPU0, PROMAP_GAUGE, 47);
	check_value(&l, "gpu.sm_clock_mhz", GPU0, PROMAP_GAUGE, 1980);
	check_value(&l, "gpu.sm_clock_mhz", GPU1, PROMAP_GAUGE, 345);
	check_value(&l, "gpu.mem_clock_mhz", GPU1, PROMAP_GAUGE, 2619);
	const struct promap_obs *o = get(&l, "gpu.power_w", GPU1);
	if (o) {
		CHECK_EQ_INT(o->gpu_index, 1);
		CHECK_STR(o->gpu_model, "NVIDIA H100 80GB HBM3");
		CHECK_STR(o->concept, "gpu.power_w");
		CHECK_STR(o->source, "dcgm");
		CHECK(o->model == NULL);
		CHECK(o->sample && o->sample->value == 69.871);
		CHECK(isnan(o->sum) && o->buckets == NULL);
	}
	/* each concept once per GPU */
	CHECK_EQ_INT(count_named(&l, "gpu.mem_total_bytes"), 2);
	CHECK_EQ_INT(count_named(&l, "gpu.power_w"), 2);
	/* unknown fields stay raw, with the GPU labels picked out */
	o = get(&l, "DCGM_FI_DEV_FB_FREE", GPU0);
	if (o) {
		CHECK(o->concept == NULL && o->source == NULL);
		CHECK_EQ_INT(o->kind, PROMAP_GAUGE);
		CHECK_EQ_DBL(o->value, 4123);
		CHECK_EQ_INT(o->gpu_index, 0);
	}
	o = get(&l, "DCGM_FI_PROF_PCIE_TX_BYTES", GPU1);
	if (o) {
		CHECK_EQ_INT(o->kind, PROMAP_COUNTER);
		CHECK_EQ_DBL(o->value, 1048576);
	}
	/* mapped samples do not also appear raw */
	CHECK(promap_find(&l, "DCGM_FI_DEV_POWER_USAGE", NULL) == NULL);
	CHECK(promap_find(&l, "DCGM_FI_DEV_FB_USED", NULL) == NULL);
	/* 40 samples: 16 mapped directly + 2 derived totals + 24 raw */
	CHECK_EQ_INT(l.n, 42);
	promap_list_release(&l);
	CHECK(l.obs == NULL && l.n == 0);

	/* only the mapped ones */
	promap_collect(&doc, PROMAP_MAPPED_ONLY, &l);
	CHECK_EQ_INT(l.n, 18);
	for (size_t i = 0; i < l.n; i++)
		CHECK(l.obs[i].concept != NULL && l.obs[i].gpu_uuid != NULL);
	promap_list_release(&l);
	prom_doc_release(&doc);

	/* FB_TOTAL, when exported, is preferred to used + free; MIG instance
	 * series stay raw */
	static const char text[] =
	    "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\"} 1000\n"
	    "DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-a\"} 500\n"
	    "DCGM_FI_DEV_FB_TOTAL{gpu=\"0\",UUID=\"GPU-a\"} 1600\n"
	    "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-b\",GPU_I_PROFILE=\"1g.10gb\","
	    "GPU_I_ID=\"7\"} 10\n"
	    "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-b\",GPU_I_PROFILE=\"1g.10gb\","
	    "GPU_I_ID=\"7\"} 20\n"
	    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",GPU_I_ID=\"\"} 55\n"
	    "DCGM_FI_DEV_GPU_TEMP{gpu=\"x7\",UUID=\"GPU-c\"} 30\n"
	    "DCGM_FI_DEV_GPU_TEMP{gpu=\"99999999999\",UUID=\"GPU-d\"} 31\n";
	if (load_text(text, strlen(text), 0, &doc, &l) == 0) {
		CHECK_EQ_INT(count_named(&l, "gpu.mem_total_bytes"), 1);
		check_value(&l, "gpu.mem_total_bytes", "GPU-a", PROMAP_GAUGE, 1600.0 * 1048576);
		check_value(&l, "gpu.mem_used_bytes", "GPU-a", PROMAP_GAUGE, 1000.0 * 1048576);
		CHECK(promap_find(&l, "gpu.mem_used_bytes", "GPU-b") == NULL);
		check_value(&l, "DCGM_FI_DEV_FB_USED", "GPU-b", PROMAP_GAUGE, 10);
		check_value(&l, "gpu.util_pct", "GPU-b", PROMAP_GAUGE, 55); /* empty GPU_I_ID */
		o = get(&l, "gpu.temp_c", "GPU-c");
		CHECK(o && o->gpu_index == -1);
		o = get(&l, "gpu.temp_c", "GPU-d");
		CHECK(o && o->gpu_index == -1);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
	/* used without a matching free: no total */
	static const char text2[] = "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\"} 1000\n"
	                            "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-b\"} 500\n";
	if (load_text(text2, strlen(text2), 0, &doc, &l) == 0) {
		CHECK_EQ_INT(count_named(&l, "gpu.mem_total_bytes"), 0);
		CHECK_EQ_INT(l.n, 2);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
}

static void test_vllm(void)
{
	struct prom_doc doc;
	struct promap_list l;
	const char *M = "meta-llama/Llama-3.1-8B-Instruct";

	if (load("vllm.txt", 0, &doc, &l) != 0)
		return;
	check_value(&l, "server.requests_running", NULL, PROMAP_GAUGE, 12);
	check_value(&l, "server.requests_waiting", NULL, PROMAP_GAUGE, 3);
	/* kv_cache_usage_perc is preferred to the deprecated gpu_cache_usage_perc */
	CHECK_EQ_INT(count_named(&l, "server.kv_cache_usage"), 1);
	check_value(&l, "server.kv_cache_usage", NULL, PROMAP_GAUGE, 0.4231);
	const struct promap_obs *o = get(&l, "server.kv_cache_usage", NULL);
	CHECK(o && strcmp(o->sample->name, "vllm:kv_cache_usage_perc") == 0);
	check_value(&l, "vllm:gpu_cache_usage_perc", NULL, PROMAP_GAUGE, 0.4231);
	/* hits / queries, counted once although both name generations exist */
	CHECK_EQ_INT(count_named(&l, "server.prefix_cache_hit_rate"), 1);
	check_value(&l, "server.prefix_cache_hit_rate", NULL, PROMAP_GAUGE, 0.25);
	check_value(&l, "vllm:prefix_cache_hits_total", NULL, PROMAP_COUNTER, 51200);
	check_value(&l, "vllm:gpu_prefix_cache_queries_total", NULL, PROMAP_COUNTER, 204800);
	check_value(&l, "server.preemptions_total", NULL, PROMAP_COUNTER, 7);
	check_value(&l, "server.prompt_tokens_total", NULL, PROMAP_COUNTER, 1234567);
	check_value(&l, "server.generation_tokens_total", NULL, PROMAP_COUNTER, 456789);
	o = get(&l, "server.prompt_tokens_total", NULL);
	if (o) {
		CHECK_STR(o->model, M);
		CHECK_STR(o->source, "vllm");
		CHECK_EQ_INT(o->gpu_index, -1);
		CHECK(o->gpu_uuid == NULL);
	}
	o = get(&l, "server.ttft_seconds", NULL);
	if (o) {
		CHECK_EQ_INT(o->kind, PROMAP_HISTOGRAM);
		CHECK_EQ_DBL(o->value, 260);
		CHECK_EQ_DBL(o->count, 260);
		CHECK_EQ_DBL(o->sum, 21.34);
		CHECK_EQ_INT(o->nbuckets, 15);
		CHECK_STR(o->model, M);
		CHECK_NEAR(prom_histogram_quantile(0.5, o->buckets, o->nbuckets),
		           0.06 + 0.02 * 10.0 / 60.0, 1e-12);
	}
	/* the deprecated per-token histogram steps aside for inter_token_latency */
	CHECK_EQ_INT(count_named(&l, "server.itl_seconds"), 1);
	o = get(&l, "server.itl_seconds", NULL);
	if (o) {
		CHECK_STR(o->sample->name, "vllm:inter_token_latency_seconds_bucket");
		/* p50 rank 5000 == count of le=0.025: 0.01 + 0.015 * 4900/4900 */
		CHECK_NEAR(prom_histogram_quantile(0.5, o->buckets, o->nbuckets), 0.025, 1e-12);
	}
	o = get(&l, "vllm:time_per_output_token_seconds", NULL);
	CHECK(o && o->kind == PROMAP_HISTOGRAM && o->concept == NULL);
	o = get(&l, "server.e2e_latency_seconds", NULL);
	if (o) {
		CHECK_EQ_DBL(o->sum, 900.5);
		/* p99 rank 257.4 in (5, 10]: 5 + 5 * 37.4/38 */
		CHECK_NEAR(prom_histogram_quantile(0.99, o->buckets, o->nbuckets),
		           5 + 5 * 37.4 / 38, 1e-12);
	}
	get(&l, "server.queue_time_seconds", NULL);
	/* raw pass-through: python collectors, _created gauges, info metrics */
	check_value(&l, "python_gc_objects_collected_total", NULL, PROMAP_COUNTER, 48212);
	CHECK_EQ_INT(count_named(&l, "python_gc_objects_collected_total"), 3);
	check_value(&l, "vllm:prompt_tokens_created", NULL, PROMAP_GAUGE, 1.7401234567890124e+09);
	check_value(&l, "vllm:cache_config_info", NULL, PROMAP_GAUGE, 1);
	CHECK_EQ_INT(count_named(&l, "vllm:request_success_total"), 3);
	promap_list_release(&l);

	promap_collect(&doc, PROMAP_MAPPED_ONLY, &l);
	CHECK_EQ_INT(l.n, 11);
	promap_list_release(&l);
	prom_doc_release(&doc);

	/* two engines: one observation each; untyped families still map; old
	 * (V0) names alone map too */
	static const char text[] =
	    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n"
	    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 6\n"
	    "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
	    "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.125\n"
	    "# TYPE vllm:time_per_output_token_seconds histogram\n"
	    "vllm:time_per_output_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 3\n"
	    "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n";
	if (load_text(text, strlen(text), PROMAP_MAPPED_ONLY, &doc, &l) == 0) {
		CHECK_EQ_INT(count_named(&l, "server.requests_running"), 2);
		CHECK_EQ_DBL(l.obs[0].value + l.obs[1].value, 10);
		check_value(&l, "server.kv_cache_usage", NULL, PROMAP_GAUGE, 0.5);
		check_value(&l, "server.prefix_cache_hit_rate", NULL, PROMAP_GAUGE, 0.125);
		o = get(&l, "server.itl_seconds", NULL);
		if (o) {
			CHECK(isnan(o->value) && isnan(o->count) && isnan(o->sum));
			CHECK_EQ_INT(o->nbuckets, 2);
		}
		CHECK_EQ_INT(l.n, 5);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
	/* zero queries: no ratio; the V0-era gpu_ counters alone map */
	static const char text2[] = "vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 0\n"
	                            "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 0\n"
	                            "vllm:gpu_prefix_cache_queries_total{model_name=\"n\"} 10\n"
	                            "vllm:gpu_prefix_cache_hits_total{model_name=\"n\"} 4\n";
	if (load_text(text2, strlen(text2), PROMAP_MAPPED_ONLY, &doc, &l) == 0) {
		CHECK_EQ_INT(l.n, 1);
		check_value(&l, "server.prefix_cache_hit_rate", NULL, PROMAP_GAUGE, 0.4);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
	/* a mapped name with an unexpected type stays raw */
	static const char text3[] = "# TYPE vllm:num_requests_running histogram\n"
	                            "vllm:num_requests_running_bucket{le=\"+Inf\"} 1\n"
	                            "# TYPE vllm:time_to_first_token_seconds gauge\n"
	                            "vllm:time_to_first_token_seconds 0.5\n";
	if (load_text(text3, strlen(text3), 0, &doc, &l) == 0) {
		CHECK_EQ_INT(l.n, 2);
		CHECK(l.n == 2 && l.obs[0].concept == NULL && l.obs[1].concept == NULL);
		CHECK(l.n == 2 && l.obs[0].kind == PROMAP_HISTOGRAM);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
}

static void test_sglang(void)
{
	struct prom_doc doc;
	struct promap_list l;

	if (load("sglang.txt", 0, &doc, &l) != 0)
		return;
	check_value(&l, "server.requests_running", NULL, PROMAP_GAUGE, 37);
	check_value(&l, "server.requests_waiting", NULL, PROMAP_GAUGE, 5);
	check_value(&l, "server.kv_cache_usage", NULL, PROMAP_GAUGE, 0.28);
	check_value(&l, "server.prefix_cache_hit_rate", NULL, PROMAP_GAUGE, 0.007507552643049313);
	check_value(&l, "server.preemptions_total", NULL, PROMAP_COUNTER, 2);
	check_value(&l, "server.prompt_tokens_total", NULL, PROMAP_COUNTER, 8.128902e+06);
	check_value(&l, "server.generation_tokens_total", NULL, PROMAP_COUNTER, 7.557572e+06);
	const struct promap_obs *o = get(&l, "server.ttft_seconds", NULL);
	if (o) {
		CHECK_EQ_DBL(o->count, 100);
		CHECK_EQ_DBL(o->sum, 45);
		CHECK_STR(o->source, "sglang");
		CHECK_STR(o->model, "meta-llama/Llama-3.1-8B-Instruct");
	}
	o = get(&l, "server.itl_seconds", NULL);
	if (o) /* p90 rank 1800 == count of le=0.015 */
		CHECK_NEAR(prom_histogram_quantile(0.9, o->buckets, o->nbuckets), 0.015, 1e-12);
	get(&l, "server.e2e_latency_seconds", NULL);
	o = get(&l, "server.queue_time_seconds", NULL);
	if (o)
		CHECK_EQ_DBL(prom_histogram_quantile(0.1, o->buckets, o->nbuckets), 0);
	check_value(&l, "sglang:gen_throughput", NULL, PROMAP_GAUGE, 1234.5);
	check_value(&l, "sglang:cached_tokens_total", NULL, PROMAP_COUNTER, 2.048e6);
	promap_list_release(&l);
	promap_collect(&doc, PROMAP_MAPPED_ONLY, &l);
	CHECK_EQ_INT(l.n, 11);
	promap_list_release(&l);
	prom_doc_release(&doc);
}

static void test_tgi(void)
{
	struct prom_doc doc;
	struct promap_list l;

	if (load("tgi.txt", 0, &doc, &l) != 0)
		return;
	check_value(&l, "server.requests_running", NULL, PROMAP_GAUGE, 8);
	check_value(&l, "server.requests_waiting", NULL, PROMAP_GAUGE, 2);
	const struct promap_obs *o = get(&l, "server.e2e_latency_seconds", NULL);
	if (o) {
		CHECK_STR(o->source, "tgi");
		CHECK_EQ_DBL(o->count, 1200);
		CHECK_EQ_DBL(o->sum, 2467.8125);
		CHECK(o->model == NULL);
		/* p50 rank 600 in (1.70859375, 2.562890625]: 300 -> 900 */
		CHECK_NEAR(prom_histogram_quantile(0.5, o->buckets, o->nbuckets),
		           1.70859375 + (2.5628906250000004 - 1.7085937500000001) * 0.5, 1e-12);
	}
	get(&l, "server.queue_time_seconds", NULL);
	o = get(&l, "server.tpot_seconds", NULL);
	if (o)
		CHECK_NEAR(prom_histogram_quantile(0.5, o->buckets, o->nbuckets),
		           0.017085937500000002, 1e-15);
	/* TGI counters carry no _total and stay raw */
	check_value(&l, "tgi_request_count", NULL, PROMAP_COUNTER, 1234);
	CHECK_EQ_INT(count_named(&l, "tgi_request_failure"), 2);
	/* a raw histogram: one observation per series */
	CHECK_EQ_INT(count_named(&l, "tgi_batch_forward_duration"), 2);
	o = get(&l, "tgi_batch_forward_duration", NULL);
	CHECK(o && o->kind == PROMAP_HISTOGRAM && o->count == 512);
	promap_list_release(&l);
	promap_collect(&doc, PROMAP_MAPPED_ONLY, &l);
	CHECK_EQ_INT(l.n, 5);
	promap_list_release(&l);
	prom_doc_release(&doc);
}

static void test_trtllm(void)
{
	struct prom_doc doc;
	struct promap_list l;

	if (load("trtllm.txt", 0, &doc, &l) != 0)
		return;
	check_value(&l, "server.requests_running", NULL, PROMAP_GAUGE, 7);
	check_value(&l, "server.requests_waiting", NULL, PROMAP_GAUGE, 3);
	/* no "fraction" sample in this page: used / max */
	CHECK_EQ_INT(count_named(&l, "server.kv_cache_usage"), 1);
	check_value(&l, "server.kv_cache_usage", NULL, PROMAP_GAUGE, 0.25);
	const struct promap_obs *o = get(&l, "server.kv_cache_usage", NULL);
	if (o) {
		CHECK_STR(o->model, "tensorrt_llm");
		CHECK_STR(o->source, "trtllm");
	}
	/* the selector's other values stay raw, "used" too (it was only used
	 * for a derived concept) */
	CHECK_EQ_INT(count_named(&l, "nv_trt_llm_request_metrics"), 3);
	CHECK_EQ_INT(count_named(&l, "nv_trt_llm_kv_cache_block_metrics"), 4);
	/* Triton's GPU metrics: fraction -> percent */
	const char *g = "GPU-5e9f6c1a-3b2d-4c8e-9f10-2a7b6c5d4e3f";
	check_value(&l, "gpu.util_pct", g, PROMAP_GAUGE, 93);
	check_value(&l, "gpu.mem_total_bytes", g, PROMAP_GAUGE, 85520809984.0);
	check_value(&l, "gpu.mem_used_bytes", g, PROMAP_GAUGE, 76235669504.0);
	check_value(&l, "gpu.power_w", g, PROMAP_GAUGE, 512.345);
	check_value(&l, "gpu.energy_j", g, PROMAP_COUNTER, 1234567.891);
	o = get(&l, "gpu.power_w", g);
	if (o) {
		CHECK_STR(o->source, "triton");
		CHECK_EQ_INT(o->gpu_index, -1);
	}
	check_value(&l, "nv_gpu_power_limit", g, PROMAP_GAUGE, 700);
	o = get(&l, "nv_inference_first_response_histogram_ms", NULL);
	CHECK(o && o->kind == PROMAP_HISTOGRAM && o->sum == 118784 && o->nbuckets == 5);
	promap_list_release(&l);
	promap_collect(&doc, PROMAP_MAPPED_ONLY, &l);
	CHECK_EQ_INT(l.n, 8);
	promap_list_release(&l);
	prom_doc_release(&doc);

	/* with "fraction" it is used directly and used/max steps aside */
	static const char text[] =
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\",model=\"t\","
	    "version=\"1\"} 0.6\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"t\","
	    "version=\"1\"} 2000\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"t\","
	    "version=\"1\"} 8000\n";
	if (load_text(text, strlen(text), 0, &doc, &l) == 0) {
		CHECK_EQ_INT(count_named(&l, "server.kv_cache_usage"), 1);
		check_value(&l, "server.kv_cache_usage", NULL, PROMAP_GAUGE, 0.6);
		CHECK_EQ_INT(l.n, 3);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
	/* two models: used/max pairs by the other labels; max 0 gives nothing */
	static const char text2[] =
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"a\"} 1\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"b\"} 3\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"b\"} 4\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"a\"} 2\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"c\"} 3\n"
	    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"c\"} 0\n";
	if (load_text(text2, strlen(text2), PROMAP_MAPPED_ONLY, &doc, &l) == 0) {
		CHECK_EQ_INT(l.n, 2);
		if (l.n == 2) {
			CHECK_STR(l.obs[0].model, "a");
			CHECK_EQ_DBL(l.obs[0].value, 0.5);
			CHECK_STR(l.obs[1].model, "b");
			CHECK_EQ_DBL(l.obs[1].value, 0.75);
		}
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
}

static void test_edge(void)
{
	struct prom_doc doc;
	struct promap_list l;
	char err[HR_ERRLEN];

	/* an empty document */
	CHECK_EQ_INT(prom_parse("", 0, 0, &doc, err), 0);
	CHECK_EQ_INT(promap_collect(&doc, 0, &l), 0);
	CHECK(promap_find(&l, "gpu.power_w", NULL) == NULL);
	promap_list_release(&l);
	promap_list_release(&l);
	prom_doc_release(&doc);
	/* a raw summary: quantiles as gauges, _sum and _count as counters */
	static const char text[] = "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 10\ns_count 4\n"
	                           "u 5\n";
	if (load_text(text, strlen(text), 0, &doc, &l) == 0) {
		CHECK_EQ_INT(l.n, 4);
		if (l.n == 4) {
			CHECK_STR(l.obs[0].name, "s");
			CHECK_EQ_INT(l.obs[0].kind, PROMAP_GAUGE);
			CHECK_STR(l.obs[1].name, "s_sum");
			CHECK_EQ_INT(l.obs[1].kind, PROMAP_COUNTER);
			CHECK_STR(l.obs[2].name, "s_count");
			CHECK_STR(l.obs[3].name, "u");
			CHECK_EQ_INT(l.obs[3].kind, PROMAP_GAUGE);
		}
		promap_list_release(&l);
		CHECK_EQ_INT(promap_collect(&doc, PROMAP_MAPPED_ONLY, &l), 0);
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
	/* NaN and Inf pass through the conversions */
	static const char text2[] = "DCGM_FI_DEV_POWER_USAGE{UUID=\"g\"} NaN\n"
	                            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"g\"} +Inf\n";
	if (load_text(text2, strlen(text2), 0, &doc, &l) == 0) {
		const struct promap_obs *o = get(&l, "gpu.power_w", "g");
		CHECK(o && isnan(o->value));
		o = get(&l, "gpu.energy_j", "g");
		CHECK(o && isinf(o->value));
		promap_list_release(&l);
		prom_doc_release(&doc);
	}
}

int main(void)
{
	test_rules();
	test_dcgm();
	test_vllm();
	test_sglang();
	test_tgi();
	test_trtllm();
	test_edge();
	return tap_done();
}
