/* promap.h - maps metrics scraped from GPU exporters and inference servers
 * (a parsed prom_doc) to common concept names, with unit conversion.
 *
 * Concepts (docs/prometheus.md has the full table and the sources):
 *   gpu.power_w, gpu.energy_j, gpu.util_pct, gpu.mem_util_pct,
 *   gpu.mem_used_bytes, gpu.mem_total_bytes, gpu.temp_c, gpu.sm_clock_mhz,
 *   gpu.mem_clock_mhz                      - the names NVML sampling uses
 *   server.requests_running, server.requests_waiting,
 *   server.kv_cache_usage (fraction 0..1), server.prefix_cache_hit_rate
 *   (fraction 0..1), server.preemptions_total, server.prompt_tokens_total,
 *   server.generation_tokens_total         - gauges and counters
 *   server.ttft_seconds, server.itl_seconds, server.tpot_seconds,
 *   server.e2e_latency_seconds, server.queue_time_seconds - histograms
 * Sources: DCGM exporter, Triton's GPU metrics, vLLM, SGLang, TGI and
 * TensorRT-LLM's Triton backend.
 *
 * A rule maps one metric family (optionally only the samples whose
 * selector label has a given value) directly, or derives a concept from
 * two samples with the same other labels (a sum, or a ratio). Direct rules
 * replace the raw observation of the samples they map; derived ones are
 * added next to them. A rule may step aside when a preferred family (or
 * selector value) is present in the same document, so a server exposing
 * both an old and a new name is not counted twice. DCGM rules skip MIG
 * instance series (a non-empty GPU_I_ID label): those stay raw.
 *
 * Unknown series are kept under their own name (promap_lookup returns NULL
 * for them): one observation per sample (untyped ones as gauges), one per
 * series for histograms.
 *
 * Ownership: a promap_list owns its observation array; every string,
 * sample and bucket it points to is borrowed from the rule table (static)
 * or from the prom_doc, which must outlive the list.
 */
#ifndef HR_PROMAP_H
#define HR_PROMAP_H

#include <stddef.h>

#include "prom.h"

enum promap_kind {
	PROMAP_GAUGE = 0,
	PROMAP_COUNTER,
	PROMAP_HISTOGRAM,
};

enum promap_op {
	PROMAP_DIRECT = 0, /* value * scale */
	PROMAP_SUM,        /* (value + other) * scale */
	PROMAP_RATIO,      /* value / other * scale, only when other > 0 */
};

#define PROMAP_F_NO_MIG 1u /* not for MIG instance series (GPU_I_ID set) */

struct promap_rule {
	const char *metric;    /* family name as exposed */
	const char *sel_label; /* NULL, or: only samples whose sel_label ... */
	const char *sel_value; /* ... has this value */
	const char *concept;
	int kind;                    /* enum promap_kind; histogram rules need a histogram family */
	int op;                      /* enum promap_op; histogram rules are PROMAP_DIRECT */
	double scale;                /* source unit -> concept unit; 1 for histograms */
	const char *other;           /* SUM/RATIO: the second family (may be metric) */
	const char *other_sel_value; /* SUM/RATIO with sel_label: its selector value */
	const char *unless;          /* step aside when this family has samples ... */
	const char *unless_sel_value; /* ... (and one with sel_label = this, when set) */
	const char *source;           /* "dcgm", "triton", "vllm", "sglang", "tgi", "trtllm" */
	unsigned flags;               /* PROMAP_F_* */
};

extern const struct promap_rule promap_rules[];
extern const size_t promap_rules_count;

/* The first direct rule for a sample of family `metric` (s may be NULL:
 * then only rules without selector), ignoring doc-dependent conditions
 * (unless, MIG). NULL for unknown metrics. */
const struct promap_rule *promap_lookup(const char *metric, const struct prom_sample *s);

struct promap_obs {
	const char *name;      /* the concept, or the raw series / family name */
	const char *concept;   /* == name when mapped, NULL when raw */
	const char *source;    /* the rule's source; NULL when raw */
	int kind;              /* enum promap_kind */
	int gpu_index;         /* label "gpu" when a non-negative integer, else -1 */
	const char *gpu_uuid;  /* label "UUID" (DCGM) or "gpu_uuid" (Triton), or NULL */
	const char *gpu_model; /* label "modelName" (DCGM), or NULL */
	const char *model;     /* label "model_name" (vLLM, SGLang) or "model" (Triton), or NULL */
	double value; /* in the concept's unit; histograms: the observation count (NaN if none) */
	/* histograms only (else NaN, NULL, 0): */
	double sum, count;
	const struct prom_bucket *buckets; /* cumulative, sorted; bounds in the source unit */
	size_t nbuckets;
	const struct prom_sample *sample; /* the sample (histograms: the series' first) */
};

struct promap_list {
	struct promap_obs *obs;
	size_t n;
};

#define PROMAP_MAPPED_ONLY 1u /* leave out raw observations */

/* Fills *out (need not be initialised) with the observations of doc in
 * document order. Returns out->n. */
size_t promap_collect(const struct prom_doc *doc, unsigned flags, struct promap_list *out);
void promap_list_release(struct promap_list *l);

/* The first observation named `name` (concept or raw) whose gpu_uuid is
 * `gpu_uuid` (any when NULL), or NULL. */
const struct promap_obs *promap_find(const struct promap_list *l, const char *name,
                                     const char *gpu_uuid);

#endif
