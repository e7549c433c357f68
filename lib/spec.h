/* spec.h - the run specification: parse, validate, normalise (docs/spec.md).
 *
 * A spec arrives as JSON from the API (hostile input). spec_parse checks
 * every field's type and range, rejects unknown fields, fills defaults and
 * produces both a typed struct (for the daemon's scheduler) and the
 * normalised JSON that is stored with the run and sent to workers. Errors
 * name the offending field as a dotted path ("load.concurrency").
 *
 * Version 1 (the interface contract; later versions only add fields):
 *   {name, labels{}, target{url, endpoint, model, stream, api_key_env,
 *    headers{}, extra_body{}, timeout_s, template{path, body, response_path,
 *    stream_path}}, workload{kind, isl{mean,stddev}, osl{mean,stddev}, seed,
 *    sessions{turns, think_time_s}, trace, passages, batch_size, images{count,
 *    width, height, format, quality, pool}, audio{count, duration_s, sample_rate,
 *    format, pool}},
 *    load{mode, concurrency | rate, arrival, smoothness, max_concurrency,
 *    ramp_s, batch{size, interval_s, jitter_s}, requests | duration_s, grace_s,
 *    cancel{fraction, after_s},
 *    speedup, start_s, end_s}, warmup{requests | duration_s, load{...}},
 *    telemetry{nvml, interval_ms, scrape_timeout_ms, dcgm_urls[],
 *    server_metrics, metrics_urls[]}, workers, classes[{name, target, workload,
 *    load, goodput, workers}]}
 */
#ifndef HR_SPEC_H
#define HR_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hrlimits.h"

/* target.endpoint. The numbers are not stored (the spec stores the name);
 * what each one is, its paths and what it accepts are in spec_endpoints[]
 * (lib/spec.c); how the worker speaks it is its handler (worker/ephandler.h)
 * and how the mock answers it its route (mock/). New types go last. */
enum spec_endpoint {
	SPEC_EP_CHAT = 0,
	SPEC_EP_COMPLETIONS,
	SPEC_EP_EMBEDDINGS,      /* OpenAI /v1/embeddings */
	SPEC_EP_RANKINGS_NIM,    /* NVIDIA NIM /v1/ranking */
	SPEC_EP_RANKINGS_COHERE, /* Cohere /v2/rerank */
	SPEC_EP_RANKINGS_TEI,    /* Hugging Face TEI /rerank */
	SPEC_EP_TGI,             /* Hugging Face TGI /generate, /generate_stream */
	SPEC_EP_TEMPLATE,        /* target.template: the user's path and body */
	SPEC_EP_EMBEDDINGS_NIM,    /* NVIDIA NIM /v1/embeddings (input_type, truncate) */
	SPEC_EP_EMBEDDINGS_COHERE, /* Cohere /v2/embed */
	SPEC_EP_EMBEDDINGS_TEI,    /* Hugging Face TEI /embed */
	SPEC_EP_VLLM_GENERATE,     /* vLLM /inference/v1/generate: token ids in and out */
	SPEC_EP_SGLANG_GENERATE,   /* SGLang /generate: text in, streamed text and ids out */
	SPEC_EP_RAW,               /* target.raw: a body sent as given, the answer not parsed */
	SPEC_EP_RESPONSES,       /* OpenAI Responses /v1/responses */
	SPEC_EP_MESSAGES,        /* Anthropic Messages /v1/messages */
	SPEC_EP_AUDIO_TRANSCRIPTION, /* OpenAI /v1/audio/transcriptions (multipart upload) */
	SPEC_EP_IMAGE_GENERATION,    /* OpenAI /v1/images/generations */
	SPEC_EP_IMAGE_EDIT,          /* OpenAI /v1/images/edits (multipart upload) */
	SPEC_EP_IMAGE_RETRIEVAL,     /* NVIDIA NIM /v1/infer (pictures as data URLs) */
	SPEC_EP_CHAT_EMBEDDINGS,     /* vLLM /v1/embeddings with chat messages (multimodal) */
	SPEC_EP__COUNT
};
/* Bounds of the endpoint fields (docs/spec.md). */
#define SPEC_MAX_PASSAGES 1000       /* workload.passages */
#define SPEC_MAX_BATCH 2048          /* workload.batch_size */
#define SPEC_MAX_JSON_PATH 256       /* bytes of a template's response_path / stream_path */
#define SPEC_MAX_JSON_PATH_SEGS 32   /* segments of one */
#define SPEC_MAX_RAW_BODY 262144     /* bytes of target.raw.body as sent */
#define SPEC_MAX_MEDIA_COUNT 16      /* workload.images.count, workload.audio.count */
#define SPEC_MAX_MEDIA_POOL 64       /* workload.images.pool, workload.audio.pool */
/* raw bytes (RGB pixels, PCM samples) of one request's media, and of a pool */
#define SPEC_MAX_MEDIA_REQ_BYTES (48u << 20)
#define SPEC_MAX_MEDIA_POOL_BYTES (256u << 20)
enum spec_load_mode { SPEC_LOAD_CONCURRENCY = 0, SPEC_LOAD_RATE, SPEC_LOAD_TRACE };
enum spec_workload_kind { SPEC_WL_SYNTHETIC = 0, SPEC_WL_TRACE, SPEC_WL_DATASET };
enum spec_maxtok { SPEC_MAXTOK_MAX_TOKENS = 0, SPEC_MAXTOK_COMPLETION };
/* target.transport: the worker's HTTP client (docs/worker.md, "Transports") */
enum spec_transport { SPEC_TRANSPORT_AUTO = 0, SPEC_TRANSPORT_NATIVE, SPEC_TRANSPORT_CURL };
/* How requests take the entries of a dataset (workload.dataset.sampling). */
/* workload.token_count: where a record's ISL and OSL come from (docs/metrics.md) */
enum spec_count { SPEC_COUNT_USAGE = 0, SPEC_COUNT_TOKENIZER, SPEC_COUNT_CHUNKS };

enum spec_sampling { SPEC_SAMPLE_DEFAULT = 0, SPEC_SAMPLE_SEQUENTIAL, SPEC_SAMPLE_RANDOM,
		     SPEC_SAMPLE_SHUFFLE };
/* arrival laws: the values of enum sched_law (sched.h) */

struct spec_dist {
	double mean, stddev;
};

/* The shape of one phase's load (the profiling phase, or the warm-up). */
struct spec_load {
	int mode;
	int concurrency;     /* concurrency mode */
	double rate;         /* rate mode: requests per second */
	int arrival;         /* rate mode: SCHED_CONSTANT / POISSON / GAMMA */
	double smoothness;   /* gamma shape k (CV = 1/sqrt(k)) */
	int max_concurrency; /* rate and trace modes: ceiling, 0 = none */
	double ramp_s;       /* rate and concurrency rise linearly over this */
	int batch_size;      /* rate mode, load.batch: requests released together; 0 = none */
	double batch_interval_s, batch_jitter_s; /* rate = batch_size / batch_interval_s */
	int64_t requests;    /* 0 when not bounded by a count */
	double duration_s;   /* 0 when not bounded by time */
};

/* Agent sessions (workload.sessions.tool_time_s and .documents): the wait
 * before each next turn drawn from a mixture of normals (a quick tool
 * call, a long one...) instead of think_time_s, and turns after the first
 * that append a document of doc_tokens with probability doc_probability. */
struct spec_agent {
	int n_tool; /* 0: think_time_s */
	struct spec_tool {
		double weight, mean, stddev;
	} tool[HR_MAX_TOOL_TIMES];
	double doc_probability;
	struct spec_dist doc_tokens;
};

/* target.url of a spec with target.mock until the daemon fills in the
 * address of the headroom-mock it started. */
#define SPEC_MOCK_URL "http://127.0.0.1:0"

struct spec {
	const char *name; /* borrowed from json (valid while json lives) */
	struct {
		const char *url, *model, *api_key_env; /* api_key_env may be NULL */
		int mock; /* the daemon runs a headroom-mock for the run (url: SPEC_MOCK_URL) */
		const char *api_key_secret; /* name of a daemon-held secret, or NULL */
		/* the header the key goes in, lower case, or NULL: Authorization,
		 * as "Bearer KEY"; any other carries the bare key */
		const char *api_key_header;
		int max_tokens_field; /* SPEC_MAXTOK_*: the body field of the output length */
		int transport;        /* SPEC_TRANSPORT_* */
		bool prewarm; /* open the slots' connections before time zero (native) */
		int endpoint;
		bool stream;
		double timeout_s;
		json_t *headers;    /* borrowed: object of string values */
		json_t *extra_body; /* borrowed: object, may be empty */
		/* endpoint template (target.template), else NULL: */
		const char *path;          /* borrowed: target.path, the endpoint's path
					    * replaced (Azure-style deployments...), or NULL */
		const char *template_path; /* borrowed: the path appended to url */
		json_t *template_body;     /* borrowed: object with {{placeholders}} */
		const char *response_path; /* borrowed: dotted path, or NULL */
		const char *stream_path;   /* borrowed: dotted path, or NULL */
		/* endpoint raw (target.raw), else NULL: the body, sent as its
		 * bytes when a string, else serialised compactly (borrowed) */
		json_t *raw_body;
		const char *raw_content_type; /* borrowed: target.raw.content_type, or NULL */
	} target;
	struct {
		int kind;
		struct spec_dist isl, osl;
		uint64_t seed;
		int sessions; /* multi-turn sessions enabled */
		struct spec_dist turns, think_s;
		struct spec_agent agent; /* sessions: tool times and documents (agent sessions) */
		const char *tokenizer; /* borrowed: path of the tokenizer file, or NULL */
		int64_t dataset_id;    /* dataset kind: the uploaded dataset (docs/datasets.md) */
		int sampling;          /* SPEC_SAMPLE_*; DEFAULT: by the dataset's format */
		int passages;          /* rankings endpoints: passages per request, else 0 */
		int batch_size;        /* embeddings: inputs per request, else 0 */
		/* workload.images / workload.audio (endpoints with SPEC_EPF_IMAGES /
		 * SPEC_EPF_AUDIO): synthetic media in every request; count 0: none */
		struct spec_images {
			int count, width, height, format, quality, pool; /* format: MEDIA_* */
		} images;
		struct spec_audio {
			int count, duration_ms, rate, pool;
		} audio;
		int ignore_eos;        /* send ignore_eos and min_tokens: outputs of exactly osl */
		int system_tokens;     /* workload.system_prompt.tokens: 0 = none */
		int prefix_count, prefix_tokens; /* workload.prefix_prompts: 0 = none */
		int isl_count, osl_count; /* workload.token_count.isl / .osl: SPEC_COUNT_* */
		int block_size;           /* workload.block_size: tokens of one trace hash id */
		double discrepancy_pct;   /* workload.token_count.discrepancy_pct */
		struct spec_mix {
			int isl, osl;
			double weight;
		} mix[HR_MAX_MIX];     /* workload.mix */
		int n_mix;
		const char *trace; /* borrowed JSONL text (trace kind), else NULL */
		size_t trace_len;
		size_t trace_entries;
	} workload;
	struct spec_load load; /* the profiling phase */
	double grace_s;        /* after sending ends, in-flight requests get this long */
	int stop_on_saturation; /* load.stop_on_saturation: stop when oversaturated (satdet.h) */
	double cancel_fraction, cancel_after_s;
	double speedup, trace_start_s, trace_end_s; /* trace mode; end 0 = none */
	int has_warmup;
	struct spec_load warmup; /* valid when has_warmup */
	struct {
		int nvml;             /* sample local GPUs through NVML */
		int interval_ms;      /* sampling and scraping period */
		int scrape_timeout_ms;
		int server_metrics;   /* scrape target.url + "/metrics" */
		json_t *dcgm_urls;    /* borrowed: array of strings */
		json_t *metrics_urls; /* borrowed: array of strings (server-like pages) */
	} telemetry;
	struct spec_slo {            /* goodput: a valid request meeting every one is good */
		int metric;          /* index into metric_defs */
		double limit;        /* ms: at most; tokens/sec/user: at least */
		int at_least;
	} slo[HR_MAX_SLOS];
	int n_slo;
	struct {                     /* the client verdict (docs/client.md) */
		int allow_client_bound;  /* submit --wait succeeds even when client_bound */
		double max_loop_busy;    /* a worker sample this busy is saturated */
		double max_busy_share;   /* ... and this share of such samples is too many */
		double max_lag_ms;       /* schedule lag p99 / timer lateness p99 limit */
	} client;
	struct {                     /* repeat: the run queued count times, one group */
		int count;           /* 0 or 1: no repeat */
		double cooldown_s;   /* pause between the group's runs */
	} repeat;
	struct {                     /* validity (docs/compare.md, "Validity") */
		int64_t min_requests;
		double min_duration_s;
		double max_error_rate;
		double percentile;   /* highest percentile the run must support; 0: none */
		double confidence;   /* of percentile support and SLO claims */
		double max_clock_error_ms; /* a worker clock offset bound over this: invalid */
	} validity;
	struct spec_gate {           /* gates: checked when the run ends */
		const char *name;    /* borrowed; never NULL once parsed */
		const char *metric;  /* borrowed: a metric_catalog tag */
		int stat;            /* index into metric_stat_names */
		int op;              /* SPEC_OP_*: thresholds */
		double value;
		int regression;      /* 1: against a baseline instead of a threshold */
		const char *baseline;    /* borrowed: a baseline's name, or NULL */
		int64_t baseline_run;    /* ... or a run id */
		double max_pct;          /* worse by more than this, at confidence: fails */
		double confidence;
	} gates[HR_MAX_GATES];
	int n_gates;
	int workers; /* with classes: the sum of the classes' workers; with
		      * placement: placement.local (the agents' add at the start) */
	/* placement (docs/agents.md): workers on this host and on agents
	 * chosen by label; given = 0 when the spec has none */
	struct spec_placement {
		int given;
		int local;
		int n_agents;
		struct {
			const json_t *selector; /* borrowed: an object of strings */
			int workers;            /* per matching connected agent */
		} agents[HR_MAX_PLACEMENT];
		int degrade; /* on_agent_loss "degrade" (else "fail") */
	} placement;
	/* spec.classes (docs/classes.md): traffic classes, each a whole spec of
	 * its own (the run's fields with the class's target, workload, load
	 * and goodput over them), run side by side on consecutive workers:
	 * class k has workers first_worker .. first_worker + workers - 1. */
	int n_classes;
	struct spec_class {
		const char *name; /* borrowed from json */
		struct spec *spec; /* owned */
		int first_worker, workers;
	} classes[HR_MAX_CLASSES];
	json_t *json; /* owned: the normalised spec (all defaults filled) */
};

/* The class whose workers include worker w, or -1 (no classes, or out of range). */
int spec_class_of_worker(const struct spec *s, uint32_t w);
/* The spec that governs worker w's requests: its class's, else s itself. */
const struct spec *spec_for_worker(const struct spec *s, uint32_t w);

/* Comparison operators of threshold gates. */
enum spec_op { SPEC_OP_LT = 0, SPEC_OP_LE, SPEC_OP_GT, SPEC_OP_GE };
extern const char *const spec_op_names[4]; /* "<" "<=" ">" ">=" */

struct spec_error {
	char code[32];     /* invalid_json, unknown_field, wrong_type, out_of_range,
			      missing_field, invalid_value */
	char field[512];   /* dotted path, "" for the whole document */
	char message[768];
};

/* Parse text (not necessarily NUL-terminated). default_workers is used when
 * the spec gives none (capped by the concurrency). Returns 0 and fills out
 * (release with spec_release), or -1 and fills err. */
int spec_parse(const char *text, size_t len, int default_workers, struct spec *out,
	       struct spec_error *err);
/* Same, from an already parsed object (borrowed; the spec keeps its own copy). */
int spec_from_json(json_t *root, int default_workers, struct spec *out, struct spec_error *err);
void spec_release(struct spec *s);

/* What an endpoint type is (one row of spec_endpoints[], by SPEC_EP_*). */
#define SPEC_EPF_GENERATES 0x01u  /* generates text: max_tokens, output tokens, sessions */
#define SPEC_EPF_STREAMS 0x02u    /* target.stream may be true */
#define SPEC_EPF_STREAM_DEF 0x04u /* target.stream defaults to true */
#define SPEC_EPF_PASSAGES 0x08u   /* workload.passages: a query ranked against passages */
#define SPEC_EPF_BATCH 0x10u      /* workload.batch_size: inputs per request */
#define SPEC_EPF_RAW 0x20u        /* target.raw: the body given, the answer not parsed */
#define SPEC_EPF_IMAGES 0x40u     /* workload.images: pictures in the user message */
#define SPEC_EPF_AUDIO 0x80u      /* workload.audio: audio clips in the user message */
/* one clip uploaded per request: workload.audio always filled, count 1;
 * target.extra_body's members are form fields (strings, numbers, booleans) */
#define SPEC_EPF_AUDIO_FILE 0x100u
/* the same for one picture (workload.images) */
#define SPEC_EPF_IMAGE_FILE 0x200u
/* workload.images always filled, count at least 1 (the pictures are the input) */
#define SPEC_EPF_IMAGE_NEEDED 0x400u
struct spec_endpoint_info {
	const char *name;        /* target.endpoint */
	const char *path;        /* default request path ("" for template) */
	const char *stream_path; /* the path when streamed, when another (TGI), or NULL */
	/* AIPerf's --endpoint-type names for it, NULL-terminated (headroom profile) */
	const char *aiperf[3];
	unsigned flags; /* SPEC_EPF_* */
};
extern const struct spec_endpoint_info spec_endpoints[SPEC_EP__COUNT];
/* The endpoint type AIPerf's --endpoint-type NAME means, or -1. */
int spec_endpoint_from_aiperf(const char *name);

const char *spec_endpoint_name(int ep);
const char *spec_mode_name(int mode);
const char *spec_arrival_name(int law);
/* Path appended to target.url for the endpoint ("/v1/chat/completions";
 * TGI: "/generate"; template: ""). */
const char *spec_endpoint_path(int ep);
/* The path a validated spec's requests go to: the endpoint's, TGI's
 * "/generate_stream" when streamed, or the template's path. */
const char *spec_target_path(const struct spec *s);
/* Whether the endpoint generates text (chat, completions, tgi, template);
 * embeddings and rankings answer in one piece with no output tokens. */
bool spec_endpoint_generates(int ep);
/* The placeholders of a template body (NULL-terminated, without braces):
 * "prompt", "max_tokens", "model", "stream". */
extern const char *const spec_template_placeholders[];

#endif
