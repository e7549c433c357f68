/* profile.c - `headroom profile`: AIPerf's common `aiperf profile` flags
 * turned into a headroom run spec, submitted to the daemon and waited for,
 * so that commands written for AIPerf keep working (docs/cli.md lists the
 * mapping). Flags for features headroom does not have yet are refused with
 * a message naming the flag, never silently ignored.
 *
 * `--url` is the inference server, as in AIPerf; the daemon's address
 * comes from `--daemon URL` or $HEADROOM_URL.
 *
 * `--public-dataset sharegpt` cannot download as AIPerf does: it takes a
 * local copy of AIPerf's file, from --input-file or from the directory
 * $HEADROOM_PUBLIC_DATASET_DIR, uploads it to the daemon as a sharegpt
 * dataset (the same bytes give the same dataset) and runs on that
 * (workload.kind "dataset"). A copy over the daemon's bound for a dataset
 * (the published file is about 640 MiB) is first cut down to what a run
 * takes from it: each conversation's first prompt and reply.
 * `--input-file FILE --custom-dataset-type single_turn|multi_turn|
 * random_pool` uploads FILE as a dataset of that format the same way
 * (`--fixed-schedule`: a single_turn / random_pool file's timestamps are
 * replayed, load.mode "trace"); mooncake_trace (the default type) goes
 * into the spec as workload.trace.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dynbuf.h"
#include "http.h"
#include "hrlimits.h"
#include "spec.h"
#include "util.h"
#include "view.h"

#define AIPERF_DEFAULT_REQUESTS 10 /* aiperf's --request-count default */
#define PUBLIC_DIR_ENV "HEADROOM_PUBLIC_DATASET_DIR"
#define SHAREGPT_FILE "ShareGPT_V3_unfiltered_cleaned_split.json" /* AIPerf's download */

static const char profile_help[] =
    "usage: headroom profile -m MODEL --url URL [AIPerf flags] [--daemon URL]\n"
    "                        [--name NAME] [--print-spec] [--no-wait]\n"
    "\n"
    "Runs a benchmark described with `aiperf profile` flags: they become a run\n"
    "spec (print it with --print-spec), which is submitted to the daemon and\n"
    "waited for as `headroom submit --wait` does (same output, same exit codes).\n"
    "\n"
    "  --url URL                     the inference server (http:// is added when\n"
    "                                missing; default localhost:8000)\n"
    "  -m, --model NAME              model name (required)\n"
    "  --endpoint-type TYPE          chat (default), completions, embeddings,\n"
    "                                rankings, cohere_rankings, hf_tei_rankings,\n"
    "                                huggingface_generate, nim_embeddings,\n"
    "                                cohere_embeddings, vllm_generate,\n"
    "                                sglang_generate, responses (OpenAI\n"
    "                                Responses), messages (Anthropic Messages),\n"
    "                                raw (the body: --extra-inputs JSON, sent\n"
    "                                as given), audio_transcription,\n"
    "                                image_generation, image_edit, image_retrieval,\n"
    "                                chat_embeddings (vLLM multimodal embeddings);\n"
    "                                headroom's own names too (tei_embeddings,\n"
    "                                rankings_nim, anthropic_messages is messages)\n"
    "  --endpoint PATH               the request path instead of the type's\n"
    "                                (/openai/deployments/d/chat/completions?v=1)\n"
    "  --streaming                   stream responses (default: not streamed)\n"
    "  --concurrency N               closed loop with N in flight; with\n"
    "                                --request-rate, the ceiling on requests in flight\n"
    "  --request-rate R              open loop at R requests/s\n"
    "  --arrival-pattern constant|poisson|gamma   (default poisson)\n"
    "  --arrival-smoothness K        gamma shape (1 = Poisson, < 1 burstier)\n"
    "  --request-count N             requests to send (default 10)\n"
    "  --benchmark-duration S        send for S seconds instead\n"
    "  --benchmark-grace-period S    in-flight requests get S more seconds\n"
    "  --request-timeout-seconds S   per-request timeout\n"
    "  --isl N, --isl-stddev N       prompt length (tokens; --synthetic-input-tokens-mean)\n"
    "  --osl N, --osl-stddev N       output length (--output-tokens-mean)\n"
    "  --warmup-request-count N      warm-up requests, excluded from the summary\n"
    "  --random-seed N               seed of prompts, lengths and arrivals\n"
    "  --extra-inputs K:V | JSON     merged into every request body (repeatable)\n"
    "  -H, --header 'Name: value'    extra request header (repeatable)\n"
    "  --goodput 'METRIC:LIMIT ...'  service level objectives (ms; output token\n"
    "                                throughput per user: at least)\n"
    "  --tokenizer FILE              tokenizer file on the daemon's host: prompts\n"
    "                                of exact token lengths; ISL and OSL counted\n"
    "                                with it, as AIPerf counts them\n"
    "  --use-server-token-count      ISL and OSL from the server's usage instead\n"
    "  --prompt-input-tokens-block-size N   tokens of a trace's hash_ids block\n"
    "                                (default 512)\n"
    "  --input-file FILE             a custom dataset, by --custom-dataset-type:\n"
    "                                mooncake_trace (default; replays the trace),\n"
    "                                single_turn, multi_turn or random_pool\n"
    "                                (uploaded to the daemon as a dataset)\n"
    "  --public-dataset sharegpt     ShareGPT prompts, from a local copy of\n"
    "                                " SHAREGPT_FILE ":\n"
    "                                --input-file FILE, else that file in the\n"
    "                                directory $" PUBLIC_DIR_ENV " (headroom\n"
    "                                does not download); uploaded to the daemon\n"
    "                                as a sharegpt dataset (also with --print-spec)\n"
    "  --fixed-schedule              replay at the timestamps (implied for a\n"
    "                                trace; single_turn / random_pool files)\n"
    "  --workers-max N               worker processes\n"
    "\n"
    "headroom's own:\n"
    "  --daemon URL                  headroomd (default $HEADROOM_URL, else\n"
    "                                http://127.0.0.1:8080)\n"
    "  --name NAME                   the run's name\n"
    "  --print-spec                  print the spec and exit, submitting nothing\n"
    "  --no-wait                     submit and return\n"
    "  --validity-percentile P       the highest percentile the run must support to\n"
    "                                be valid (p50 ... p99; default none: AIPerf\n"
    "                                judges no validity; docs/compare.md)\n"
    "\n"
    "Refused for now (the feature is not in headroom yet): --public-dataset other\n"
    "than sharegpt, other --custom-dataset-type values, and other endpoint types.\n";

struct pflags {
	const char *url, *model, *endpoint, *path, *arrival, *tokenizer, *input_file, *dataset_type;
	const char *daemon, *name, *public_dataset, *validity;
	char *dataset_path;         /* a dataset to upload (owned), or NULL */
	const char *dataset_format; /* its format: sharegpt, single_turn, ... */
	int streaming, print_spec, no_wait, server_count, fixed_schedule;
	double concurrency, rate, smoothness, requests, duration, grace, timeout;
	double isl, isl_sd, osl, osl_sd, warmup, seed, workers, block_size;
	json_t *extra, *headers, *goodput;
};

static int bad(const char *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(const char *flag, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "headroom profile: %s: ", flag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'headroom profile --help'.\n", stderr);
	return EXIT_USAGE;
}

static int number(const char *flag, const char *v, double lo, double hi, int integer,
		  double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(d) || d < lo || d > hi ||
	    (integer && d != floor(d)))
		return bad(flag, "wants %s from %g to %g, not '%s'",
			   integer ? "a whole number" : "a number", lo, hi, v);
	*out = d;
	return 0;
}

/* "key:value" (the value as JSON when it parses, else as a string) or a
 * JSON object, merged into extra. */
static int extra_input(const char *v, json_t *extra)
{
	if (v[0] == '{') {
		json_error_t je;
		json_t *o = json_loads(v, 0, &je);
		if (!json_is_object(o)) {
			json_decref(o);
			return bad("--extra-inputs", "not a JSON object: %s", je.text);
		}
		json_object_update(extra, o);
		json_decref(o);
		return 0;
	}
	const char *colon = strchr(v, ':');
	if (!colon || colon == v)
		return bad("--extra-inputs", "wants KEY:VALUE or a JSON object, not '%s'", v);
	char *key = xstrndup(v, (size_t)(colon - v));
	json_t *val = json_loads(colon + 1, JSON_DECODE_ANY, NULL);
	if (!val)
		val = json_string(colon + 1);
	json_object_set_new(extra, key, val);
	free(key);
	return 0;
}

/* "time_to_first_token:100 inter_token_latency:3.40" (AIPerf's form; commas
 * also separate) into {metric: limit}; the daemon checks the names. */
static int goodput(const char *v, json_t *out)
{
	char *copy = xstrdup(v), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, " ,", &save); tok && !rc; tok = strtok_r(NULL, " ,", &save)) {
		char *colon = strchr(tok, ':'), *end;
		double d = colon ? strtod(colon + 1, &end) : 0;
		if (!colon || colon == tok || end == colon + 1 || *end || !(d > 0))
			rc = bad("--goodput", "wants METRIC:LIMIT pairs, not '%s'", tok);
		else {
			*colon = '\0';
			json_object_set_new(out, tok, json_real(d));
		}
	}
	free(copy);
	if (!rc && json_object_size(out) == 0)
		rc = bad("--goodput", "wants METRIC:LIMIT pairs");
	return rc;
}

static int header(const char *v, json_t *headers)
{
	const char *colon = strchr(v, ':');
	if (!colon || colon == v)
		return bad("-H", "wants 'Name: value', not '%s'", v);
	char *name = xstrndup(v, (size_t)(colon - v));
	const char *val = colon + 1;
	while (*val == ' ')
		val++;
	json_object_set_new(headers, name, json_string(val));
	free(name);
	return 0;
}

static char *read_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = xmalloc(max + 1);
	size_t n = fread(buf, 1, max + 1, f);
	int err = ferror(f);
	fclose(f);
	if (err || n > max) {
		free(buf);
		errno = err ? EIO : EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The flag table: name, short form, takes a value. */
enum {
	F_URL, F_MODEL, F_ENDPOINT, F_PATH, F_STREAMING, F_CONCURRENCY, F_RATE, F_ARRIVAL, F_SMOOTH,
	F_COUNT, F_DURATION, F_GRACE, F_TIMEOUT, F_ISL, F_ISL_SD, F_OSL, F_OSL_SD, F_WARMUP,
	F_SEED, F_EXTRA, F_HEADER, F_GOODPUT, F_TOKENIZER, F_SERVER_COUNT, F_BLOCK, F_INPUT, F_DTYPE,
	F_PUBLIC,
	F_FIXED, F_WORKERS, F_DAEMON, F_NAME, F_PRINT, F_NO_WAIT, F_VALIDITY, F_HELP, F__COUNT
};

static const struct {
	const char *name, *alias;
	char shrt;
	int has_arg;
} flags[F__COUNT] = {
    [F_URL] = {"url", NULL, 'u', 1},
    [F_MODEL] = {"model", "model-names", 'm', 1},
    [F_ENDPOINT] = {"endpoint-type", NULL, 0, 1},
    [F_PATH] = {"endpoint", "custom-endpoint", 0, 1},
    [F_STREAMING] = {"streaming", NULL, 0, 0},
    [F_CONCURRENCY] = {"concurrency", NULL, 0, 1},
    [F_RATE] = {"request-rate", NULL, 0, 1},
    [F_ARRIVAL] = {"arrival-pattern", NULL, 0, 1},
    [F_SMOOTH] = {"arrival-smoothness", NULL, 0, 1},
    [F_COUNT] = {"request-count", "num-requests", 0, 1},
    [F_DURATION] = {"benchmark-duration", NULL, 0, 1},
    [F_GRACE] = {"benchmark-grace-period", NULL, 0, 1},
    [F_TIMEOUT] = {"request-timeout-seconds", NULL, 0, 1},
    [F_ISL] = {"isl", "synthetic-input-tokens-mean", 0, 1},
    [F_ISL_SD] = {"isl-stddev", "synthetic-input-tokens-stddev", 0, 1},
    [F_OSL] = {"osl", "output-tokens-mean", 0, 1},
    [F_OSL_SD] = {"osl-stddev", "output-tokens-stddev", 0, 1},
    [F_WARMUP] = {"warmup-request-count", NULL, 0, 1},
    [F_SEED] = {"random-seed", NULL, 0, 1},
    [F_EXTRA] = {"extra-inputs", NULL, 0, 1},
    [F_HEADER] = {"header", NULL, 'H', 1},
    [F_GOODPUT] = {"goodput", NULL, 0, 1},
    [F_TOKENIZER] = {"tokenizer", NULL, 0, 1},
    [F_SERVER_COUNT] = {"use-server-token-count", NULL, 0, 0},
    [F_BLOCK] = {"prompt-input-tokens-block-size", "isl-block-size", 0, 1},
    [F_INPUT] = {"input-file", NULL, 0, 1},
    [F_DTYPE] = {"custom-dataset-type", NULL, 0, 1},
    [F_PUBLIC] = {"public-dataset", NULL, 0, 1},
    [F_FIXED] = {"fixed-schedule", NULL, 0, 0},
    [F_WORKERS] = {"workers-max", NULL, 0, 1},
    [F_DAEMON] = {"daemon", NULL, 0, 1},
    [F_NAME] = {"name", NULL, 0, 1},
    [F_PRINT] = {"print-spec", NULL, 0, 0},
    [F_NO_WAIT] = {"no-wait", NULL, 0, 0},
    [F_VALIDITY] = {"validity-percentile", NULL, 0, 1},
    [F_HELP] = {"help", NULL, 'h', 0},
};

static int find_flag(const char *arg, const char **val)
{
	*val = NULL;
	if (arg[0] == '-' && arg[1] && arg[1] != '-' && !arg[2]) {
		for (int i = 0; i < F__COUNT; i++)
			if (flags[i].shrt == arg[1])
				return i;
		return -1;
	}
	if (strncmp(arg, "--", 2) != 0)
		return -1;
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t n = eq ? (size_t)(eq - name) : strlen(name);
	for (int i = 0; i < F__COUNT; i++) {
		const char *a = flags[i].alias;
		if ((strlen(flags[i].name) == n && strncmp(flags[i].name, name, n) == 0) ||
		    (a && strlen(a) == n && strncmp(a, name, n) == 0)) {
			if (eq)
				*val = eq + 1;
			return i;
		}
	}
	return -1;
}

static int parse(int argc, char **argv, struct pflags *p)
{
	for (int i = 1; i < argc; i++) {
		const char *v;
		int f = find_flag(argv[i], &v);
		if (f < 0)
			return bad(argv[i], "unknown flag (or one headroom does not take)");
		if (flags[f].has_arg && !v) {
			if (i + 1 >= argc)
				return bad(argv[i], "needs a value");
			v = argv[++i];
		} else if (!flags[f].has_arg && v) {
			return bad(argv[i], "takes no value");
		}
		char fl[64];
		snprintf(fl, sizeof fl, "--%s", flags[f].name);
		int rc = 0;
		switch (f) {
		case F_URL: p->url = v; break;
		case F_MODEL:
			if (p->model)
				return bad(fl, "one model per run");
			p->model = v;
			break;
		case F_ENDPOINT: p->endpoint = v; break;
		case F_PATH: p->path = v; break;
		case F_STREAMING: p->streaming = 1; break;
		case F_CONCURRENCY: rc = number(fl, v, 1, HR_MAX_CONCURRENCY, 1, &p->concurrency); break;
		case F_RATE: rc = number(fl, v, 1e-6, HR_MAX_RATE, 0, &p->rate); break;
		case F_ARRIVAL: p->arrival = v; break;
		case F_SMOOTH: rc = number(fl, v, HR_MIN_SMOOTHNESS, HR_MAX_SMOOTHNESS, 0, &p->smoothness); break;
		case F_COUNT: rc = number(fl, v, 1, (double)HR_MAX_REQUESTS, 1, &p->requests); break;
		case F_DURATION: rc = number(fl, v, 0.001, HR_MAX_DURATION_S, 0, &p->duration); break;
		case F_GRACE: rc = number(fl, v, 0, HR_MAX_GRACE_S, 0, &p->grace); break;
		case F_TIMEOUT: rc = number(fl, v, 0.001, HR_MAX_TIMEOUT_S, 0, &p->timeout); break;
		case F_ISL: rc = number(fl, v, 1, HR_MAX_ISL, 1, &p->isl); break;
		case F_ISL_SD: rc = number(fl, v, 0, HR_MAX_ISL, 0, &p->isl_sd); break;
		case F_OSL: rc = number(fl, v, 1, HR_MAX_OSL, 1, &p->osl); break;
		case F_OSL_SD: rc = number(fl, v, 0, HR_MAX_OSL, 0, &p->osl_sd); break;
		case F_WARMUP: rc = number(fl, v, 1, (double)HR_MAX_REQUESTS, 1, &p->warmup); break;
		case F_SEED: rc = number(fl, v, 0, 9007199254740991.0, 1, &p->seed); break;
		case F_EXTRA: rc = extra_input(v, p->extra); break;
		case F_HEADER: rc = header(v, p->headers); break;
		case F_GOODPUT: rc = goodput(v, p->goodput); break;
		case F_PUBLIC: p->public_dataset = v; break;
		case F_TOKENIZER: p->tokenizer = v; break;
		case F_SERVER_COUNT: p->server_count = 1; break;
		case F_BLOCK: rc = number(fl, v, 1, HR_MAX_ISL, 1, &p->block_size); break;
		case F_INPUT: p->input_file = v; break;
		case F_DTYPE: p->dataset_type = v; break;
		case F_FIXED: p->fixed_schedule = 1; break; /* (a trace always does) */
		case F_WORKERS: rc = number(fl, v, 1, HR_MAX_WORKERS, 1, &p->workers); break;
		case F_DAEMON: p->daemon = v; break;
		case F_NAME: p->name = v; break;
		case F_PRINT: p->print_spec = 1; break;
		case F_NO_WAIT: p->no_wait = 1; break;
		case F_VALIDITY: p->validity = v; break;
		case F_HELP:
			fputs(profile_help, stdout);
			return -1;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* A local dataset file to upload as format (path: owned): checked readable
 * now, sent by upload_dataset() when the spec goes out; flag names it in
 * an error. */
static int take_dataset(struct pflags *p, json_t *wl, char *path, const char *format,
			const char *flag)
{
	struct stat st;
	const char *why = NULL;
	if (stat(path, &st) != 0 || access(path, R_OK) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	if (why) {
		int rc = bad(flag, "cannot read %s: %s", path, why);
		free(path);
		return rc;
	}
	p->dataset_path = path;
	p->dataset_format = format;
	json_object_set_new(wl, "kind", json_string("dataset"));
	json_object_set_new(wl, "dataset", json_object());
	return EXIT_OK;
}

/* --public-dataset: which local file it is (headroom does not download). */
static int public_dataset(struct pflags *p, json_t *wl)
{
	if (strcmp(p->public_dataset, "sharegpt") != 0)
		return bad("--public-dataset", "'%s' is not supported (supported: sharegpt)",
			   p->public_dataset);
	if (p->dataset_type)
		return bad("--custom-dataset-type",
			   "does not go with --public-dataset (its local copy is --input-file)");
	const char *dir = getenv(PUBLIC_DIR_ENV);
	if (p->input_file)
		return take_dataset(p, wl, xstrdup(p->input_file), "sharegpt", "--input-file");
	if (dir && *dir)
		return take_dataset(p, wl, xasprintf("%s/%s", dir, SHAREGPT_FILE), "sharegpt",
				    "--public-dataset");
	return bad("--public-dataset",
		   "headroom does not download: give a local copy of %s with --input-file FILE, "
		   "or put it in the directory named by $%s",
		   SHAREGPT_FILE, PUBLIC_DIR_ENV);
}

/* --input-file with a --custom-dataset-type the daemon stores as a
 * dataset. */
static int custom_dataset(struct pflags *p, json_t *wl)
{
	static const char *const types[] = {"single_turn", "multi_turn", "random_pool", NULL};
	size_t i = 0;
	while (types[i] && strcmp(types[i], p->dataset_type))
		i++;
	if (!types[i])
		return bad("--custom-dataset-type",
			   "'%s' is not in headroom yet (supported: mooncake_trace, single_turn, "
			   "multi_turn, random_pool)",
			   p->dataset_type);
	if (!p->input_file)
		return bad("--input-file", "is required with --custom-dataset-type");
	return take_dataset(p, wl, xstrdup(p->input_file), types[i], "--input-file");
}

static json_t *dist(double mean, double sd)
{
	return json_pack("{s:f, s:f}", "mean", mean, "stddev", sd);
}

/* Builds the spec; EXIT_OK and *out, or an exit code with a message. */
static int build(struct pflags *p, json_t **out)
{
	if (!p->model)
		return bad("--model", "is required (the model name the server serves)");
	json_t *target = json_object();
	const char *url = p->url ? p->url : "localhost:8000";
	char *full = strstr(url, "://") ? xstrdup(url) : xasprintf("http://%s", url);
	size_t ul = strlen(full);
	while (ul > 0 && full[ul - 1] == '/')
		full[--ul] = '\0'; /* the endpoint path is added per request */
	json_object_set_new(target, "url", json_string(full));
	free(full);
	json_object_set_new(target, "model", json_string(p->model));
	/* AIPerf's endpoint types and headroom's names for them */
	const char *ep = p->endpoint ? p->endpoint : "chat";
	int type = spec_endpoint_from_aiperf(ep);
	if (type < 0) {
		char names[1024] = "";
		size_t used = 0;
		for (int i = 0; i < SPEC_EP__COUNT; i++)
			for (int k = 0; k < 3 && spec_endpoints[i].aiperf[k]; k++) {
				int n = snprintf(names + used, sizeof names - used, "%s%s",
				                 used ? ", " : "", spec_endpoints[i].aiperf[k]);
				if (n > 0 && (size_t)n < sizeof names - used)
					used += (size_t)n;
			}
		json_decref(target);
		return bad("--endpoint-type",
			   "'%s' is not an endpoint type headroom knows (%s; a template "
			   "endpoint needs a spec)",
			   ep, names);
	}
	const char *mapped = spec_endpoints[type].name;
	json_object_set_new(target, "endpoint", json_string(mapped));
	if (p->path) /* AIPerf's --endpoint: the type's path replaced (target.path) */
		json_object_set_new(target, "path", json_string(p->path));
	json_object_set_new(target, "stream", json_boolean(p->streaming));
	if (p->streaming && !(spec_endpoints[type].flags & SPEC_EPF_STREAMS)) {
		json_decref(target);
		return bad("--streaming", "%s answers are not streamed", ep);
	}
	if (p->timeout > 0)
		json_object_set_new(target, "timeout_s", json_real(p->timeout));
	if (json_object_size(p->headers))
		json_object_set(target, "headers", p->headers);
	if (type == SPEC_EP_RAW) { /* the body sent as given: --extra-inputs */
		if (!json_object_size(p->extra)) {
			json_decref(target);
			return bad("--endpoint-type",
			           "raw sends a body of your own: give it with --extra-inputs JSON");
		}
		json_object_set_new(target, "raw", json_pack("{s:O}", "body", p->extra));
	} else if (json_object_size(p->extra)) {
		json_object_set(target, "extra_body", p->extra);
	}

	json_t *spec = json_pack("{s:o}", "target", target);
	if (p->name)
		json_object_set_new(spec, "name", json_string(p->name));
	json_object_set_new(spec, "labels", json_pack("{s:s}", "from", "aiperf-flags"));
	json_t *wl = json_object(), *load = json_object();
	json_object_set_new(spec, "workload", wl);
	json_object_set_new(spec, "load", load);
	if (p->seed >= 0)
		json_object_set_new(wl, "seed", json_integer((json_int_t)p->seed));
	if (p->block_size > 0)
		json_object_set_new(wl, "block_size", json_integer((json_int_t)p->block_size));
	if (p->tokenizer) {
		/* the daemon reads the file: a path relative to here means
		 * nothing to it (one that is not here may be the daemon's own) */
		char *abs = realpath(p->tokenizer, NULL);
		json_t *path = json_string(abs ? abs : p->tokenizer);
		free(abs);
		if (!path) {
			json_decref(spec);
			return bad("--tokenizer", "the path is not UTF-8");
		}
		json_object_set_new(wl, "tokenizer", path);
		if (!p->server_count) /* AIPerf counts with its tokenizer by default */
			json_object_set_new(wl, "token_count",
					    json_pack("{s:s, s:s}", "isl", "tokenizer", "osl",
						      "tokenizer"));
	}
	if (p->isl > 0 || p->isl_sd > 0)
		json_object_set_new(wl, "isl", dist(p->isl > 0 ? p->isl : 550, p->isl_sd));
	if (p->osl > 0 || p->osl_sd > 0)
		json_object_set_new(wl, "osl", dist(p->osl > 0 ? p->osl : 128, p->osl_sd));

	int rc = EXIT_OK;
	int custom = !p->public_dataset && (p->input_file || p->dataset_type);
	int trace = custom && (!p->dataset_type || !strcmp(p->dataset_type, "mooncake_trace"));
	if (p->public_dataset && (rc = public_dataset(p, wl)) != EXIT_OK)
		goto fail;
	if (custom && !trace && (rc = custom_dataset(p, wl)) != EXIT_OK)
		goto fail;
	/* a fixed schedule: timestamps in a single_turn / random_pool file */
	int timed = custom && !trace && p->fixed_schedule &&
		    strcmp(p->dataset_format, "multi_turn") != 0;
	if (timed || trace) {
		if (trace) { /* the trace file itself goes in the spec */
			if (!p->input_file) {
				rc = bad("--input-file", "is required with --custom-dataset-type");
				goto fail;
			}
			size_t len;
			char *text = read_file(p->input_file, HR_MAX_BODY_BYTES - 4096, &len);
			if (!text) {
				rc = bad("--input-file", "cannot read %s: %s", p->input_file,
					 errno == EFBIG ? "larger than the daemon's body limit"
							: strerror(errno));
				goto fail;
			}
			json_object_set_new(wl, "kind", json_string("trace"));
			json_object_set_new(wl, "trace", json_stringn(text, len));
			free(text);
			if (!json_object_get(wl, "trace")) {
				rc = bad("--input-file", "%s is not UTF-8 text", p->input_file);
				goto fail;
			}
		}
		json_object_set_new(load, "mode", json_string("trace"));
		if (p->concurrency > 0)
			json_object_set_new(load, "max_concurrency",
					    json_integer((json_int_t)p->concurrency));
		if (p->rate > 0) {
			rc = bad("--request-rate", "%s replays at its own timestamps",
				 trace ? "a trace" : "a fixed schedule");
			goto fail;
		}
	} else if (p->rate > 0) {
		json_object_set_new(load, "mode", json_string("rate"));
		json_object_set_new(load, "rate", json_real(p->rate));
		const char *a = p->arrival ? p->arrival : "poisson";
		if (strcmp(a, "constant") && strcmp(a, "poisson") && strcmp(a, "gamma")) {
			rc = bad("--arrival-pattern", "'%s' is not one of constant, poisson, gamma", a);
			goto fail;
		}
		json_object_set_new(load, "arrival", json_string(a));
		if (p->smoothness > 0)
			json_object_set_new(load, "smoothness", json_real(p->smoothness));
		if (p->concurrency > 0)
			json_object_set_new(load, "max_concurrency",
					    json_integer((json_int_t)p->concurrency));
	} else {
		if (p->arrival || p->smoothness > 0) {
			rc = bad(p->arrival ? "--arrival-pattern" : "--arrival-smoothness",
				 "applies to --request-rate only");
			goto fail;
		}
		json_object_set_new(load, "mode", json_string("concurrency"));
		json_object_set_new(load, "concurrency",
				    json_integer(p->concurrency > 0 ? (json_int_t)p->concurrency : 1));
	}
	if (p->duration > 0)
		json_object_set_new(load, "duration_s", json_real(p->duration));
	else if (p->requests > 0 || !(trace || timed))
		json_object_set_new(load, "requests",
				    json_integer(p->requests > 0 ? (json_int_t)p->requests
								 : AIPERF_DEFAULT_REQUESTS));
	if (p->grace >= 0)
		json_object_set_new(load, "grace_s", json_real(p->grace));
	if (p->warmup > 0)
		json_object_set_new(spec, "warmup",
				    json_pack("{s:I}", "requests", (json_int_t)p->warmup));
	if (p->workers > 0)
		json_object_set_new(spec, "workers", json_integer((json_int_t)p->workers));
	if (json_object_size(p->goodput))
		json_object_set(spec, "goodput", p->goodput);
	/* AIPerf has no validity rule and its runs are often short (10 requests
	 * by default): judge none unless asked (the daemon checks the value) */
	json_object_set_new(spec, "validity",
			    json_pack("{s:s}", "percentile", p->validity ? p->validity : "none"));
	*out = spec;
	return EXIT_OK;
fail:
	json_decref(spec);
	return rc;
}

/* --- the public dataset's upload --- */

static int is_from(const json_t *turn, const char *const *names)
{
	const char *from = json_string_value(json_object_get(turn, "from"));
	for (; from && *names; names++)
		if (strcmp(from, *names) == 0)
			return 1;
	return 0;
}

/* The element of a ShareGPT array a run takes from, as the daemon picks it
 * (docs/datasets.md): its first human turn and the reply right after it,
 * or NULL when it has no such pair. Elements the daemon would refuse are
 * errors here too. */
static json_t *sharegpt_pair(json_t *o, size_t entry, char *err)
{
	static const char *const human[] = {"human", "user", NULL};
	static const char *const gpt[] = {"gpt", "chatgpt", "assistant", NULL};
	json_t *conv = json_object_get(o, "conversations"), *t, *q = NULL;
	size_t i, qi = 0;
	if (!json_is_array(conv)) {
		errf(err, "entry %zu is not an object with a 'conversations' array", entry);
		return NULL;
	}
	json_array_foreach(conv, i, t)
	{
		if (!json_is_string(json_object_get(t, "from")) ||
		    !json_is_string(json_object_get(t, "value"))) {
			errf(err, "'conversations[%zu]' of entry %zu needs string 'from' and "
				  "'value'",
			     i, entry);
			return NULL;
		}
		if (!q && is_from(t, human)) {
			q = t;
			qi = i;
		}
	}
	json_t *a = q ? json_array_get(conv, qi + 1) : NULL;
	if (!a || !is_from(a, gpt) || json_string_length(json_object_get(q, "value")) == 0 ||
	    json_string_length(json_object_get(a, "value")) == 0)
		return NULL;
	json_t *pair = json_pack("{s:[O,O]}", "conversations", q, a);
	json_t *id = json_object_get(o, "id");
	if (id && !json_is_null(id))
		json_object_set(pair, "id", id);
	return pair;
}

/* A ShareGPT array cut down to sharegpt_pair() of each element, into out
 * (bounded by the daemon's bound for a dataset). Returns 0, or -1 with a
 * message in err. */
static int sharegpt_pairs(const char *p, size_t len, struct dynbuf *out, char *err)
{
	const char *end = p + len;
	size_t entry = 0, kept = 0;
	while (p < end && strchr(" \t\r\n", *p))
		p++;
	if (p == end || *p != '[')
		return errf(err, "not a JSON array");
	for (p++;; entry++) {
		while (p < end && strchr(" \t\r\n", *p))
			p++;
		if (p < end && *p == ']' && entry == 0)
			break;
		size_t avail = (size_t)(end - p);
		size_t cap = avail < HR_MAX_DATASET_LINE ? avail : HR_MAX_DATASET_LINE;
		json_error_t je;
		json_t *o = json_loadb(p, cap, JSON_DISABLE_EOF_CHECK, &je);
		if (!o && cap < avail && je.position >= (int)cap - 1)
			return errf(err, "entry %zu is longer than %u bytes", entry,
				    HR_MAX_DATASET_LINE);
		if (!json_is_object(o)) {
			json_decref(o);
			return o ? errf(err, "entry %zu is not a JSON object", entry)
				 : errf(err, "entry %zu is not valid JSON: %s", entry, je.text);
		}
		p += je.position;
		json_t *pair = sharegpt_pair(o, entry, err);
		json_decref(o);
		if (!pair && *err)
			return -1;
		if (pair) {
			char *text = json_dumps(pair, JSON_COMPACT);
			json_decref(pair);
			int full = !text || dynbuf_add(out, kept ? ",\n" : "[", kept ? 2 : 1) < 0 ||
				   dynbuf_addstr(out, text) < 0;
			free(text);
			if (full)
				return errf(err, "its prompts and replies alone are more than the "
						 "daemon takes (%u MiB)",
					    HR_MAX_DATASET_BYTES >> 20);
			kept++;
		}
		while (p < end && strchr(" \t\r\n", *p))
			p++;
		if (p < end && *p == ']')
			break;
		if (p == end || *p != ',')
			return errf(err, "expected ',' or ']' after entry %zu", entry);
		p++;
	}
	if (dynbuf_addstr(out, kept ? "]\n" : "[]\n") < 0)
		return errf(err, "its prompts and replies alone are more than the daemon takes "
				 "(%u MiB)",
			    HR_MAX_DATASET_BYTES >> 20);
	return 0;
}

/* The dataset's name: the file's base name, when the daemon would take it
 * (1 to HR_MAX_NAME_LEN bytes of UTF-8 without control characters). */
static const char *dataset_name(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	int ok = n >= 1 && n <= HR_MAX_NAME_LEN;
	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)base[i] >= 0x20 && base[i] != 0x7f;
	json_t *utf8 = ok ? json_string(base) : NULL; /* NULL: not UTF-8 */
	json_decref(utf8);
	return utf8 ? base : NULL;
}

/* Uploads p->dataset_path to the daemon as a p->dataset_format dataset
 * and puts its id into the spec's workload.dataset. */
static int upload_dataset(const struct pflags *p, const char *daemon, json_t *spec)
{
	const char *path = p->dataset_path;
	const char *flag = p->public_dataset ? "--public-dataset" : "--input-file";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "headroom profile: %s: cannot read %s: %s\n", flag, path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_USAGE;
	}
	size_t size = (size_t)st.st_size;
	char *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "headroom profile: %s: cannot read %s: %s\n", flag, path,
			strerror(errno));
		return EXIT_USAGE;
	}
	char err[HR_ERRLEN] = "";
	const char *body = map ? map : "";
	size_t len = size;
	struct dynbuf cut;
	dynbuf_init(&cut, HR_MAX_DATASET_BYTES);
	int rc = EXIT_OK;
	int sharegpt = strcmp(p->dataset_format, "sharegpt") == 0;
	if (size > HR_MAX_DATASET_BYTES && sharegpt) {
		if (sharegpt_pairs(map, size, &cut, err) < 0) {
			fprintf(stderr, "headroom profile: %s: %s: %s\n", flag, path, err);
			rc = EXIT_USAGE;
			goto out;
		}
		body = cut.data;
		len = cut.len;
	}
	/* local pictures and clips named by the entries go inlined */
	int k = dataset_inline_files(body, len, path, p->dataset_format, &cut, err);
	if (k < 0) {
		fprintf(stderr, "headroom profile: %s: %s: %s\n", flag, path, err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (k > 0) {
		body = cut.data;
		len = cut.len;
	}

	struct http_client c;
	if (http_client_init(&c, daemon, err) < 0) {
		fprintf(stderr, "headroom profile: --daemon: %s\n", err);
		http_client_release(&c);
		rc = EXIT_USAGE;
		goto out;
	}
	c.stop = &cli_stop;
	const char *base = dataset_name(path);
	char *name = base ? curl_easy_escape(c.curl, base, 0) : NULL;
	char *query = xasprintf("/datasets?format=%s%s%s", p->dataset_format, name ? "&name=" : "",
				name ? name : "");
	curl_free(name);
	struct http_resp r;
	http_resp_init(&r);
	int hr = http_post(&c, query, body, len, &r, err);
	free(query);
	json_t *ans = hr == 0 ? json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL)
			      : NULL;
	json_t *id = json_object_get(ans, "id");
	if (hr < 0) {
		fprintf(stderr, "headroom profile: cannot upload %s to the daemon: %s\n", path, err);
		rc = hr == HTTP_FAIL_STOPPED ? EXIT_INTERRUPTED : EXIT_DAEMON;
	} else if (r.status != 200 && r.status != 201) {
		json_t *e = json_object_get(ans, "error");
		char *msg = view_clean(view_str(e, "message"));
		const char *field = view_str(e, "field");
		char *f = field && *field ? view_clean(field) : NULL;
		fprintf(stderr,
			"headroom profile: the daemon refused %s as a %s dataset (HTTP %ld): "
			"%s%s%s%s\n",
			path, p->dataset_format, r.status, msg, f ? " (field: " : "", f ? f : "", f ? ")" : "");
		free(msg);
		free(f);
		rc = EXIT_DAEMON;
	} else if (!json_is_integer(id) || json_integer_value(id) < 1) {
		fprintf(stderr,
			"headroom profile: malformed answer from the daemon to the upload of %s\n",
			path);
		rc = EXIT_DAEMON;
	} else {
		json_t *wl = json_object_get(spec, "workload");
		json_object_set(json_object_get(wl, "dataset"), "id", id);
		double entries = -1;
		view_num(ans, "entries", &entries);
		fprintf(stderr, "headroom profile: %s is dataset %lld (%s, %.0f entries%s)\n",
			path, (long long)json_integer_value(id), p->dataset_format, entries,
			len < size ? ", cut down to each conversation's first prompt and reply"
				   : "");
	}
	json_decref(ans);
	http_resp_release(&r);
	http_client_release(&c);
out:
	dynbuf_release(&cut);
	if (map)
		munmap(map, size);
	return rc;
}

int cmd_profile(int argc, char **argv)
{
	struct pflags p = {.seed = -1, .grace = -1};
	p.extra = json_object();
	p.headers = json_object();
	p.goodput = json_object();
	int rc = parse(argc, argv, &p);
	json_t *spec = NULL;
	if (rc == 0)
		rc = build(&p, &spec);
	else if (rc < 0)
		rc = EXIT_OK; /* --help */
	const char *env = getenv("HEADROOM_URL");
	const char *daemon = p.daemon ? p.daemon : env && *env ? env : HEADROOM_DEFAULT_URL;
	int curl = 0;
	if (rc == EXIT_OK && spec && (!p.print_spec || p.dataset_path)) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			fputs("headroom: cannot initialise libcurl\n", stderr);
			rc = EXIT_DAEMON;
		} else {
			curl = 1;
		}
	}
	if (rc == EXIT_OK && spec && p.dataset_path)
		rc = upload_dataset(&p, daemon, spec);
	if (rc == EXIT_OK && spec) {
		char *text = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (p.print_spec) {
			printf("%s\n", text);
		} else {
			struct cli_opts o = {
			    .url = daemon,
			    .wait = !p.no_wait,
			    .poll_ms = 500,
			};
			rc = cli_submit_text(&o, text, strlen(text));
		}
		free(text);
	}
	if (curl)
		curl_global_cleanup();
	free(p.dataset_path);
	json_decref(spec);
	json_decref(p.extra);
	json_decref(p.headers);
	json_decref(p.goodput);
	return rc;
}
