/* main.c - headroom-mock's command line: parse the options, open the
 * listening socket(s), print "listening on HOST:PORT" (and "dcgm listening
 * on HOST:PORT" with --dcgm-listen), run the event loop until SIGINT or
 * SIGTERM, free everything and exit 0.
 *
 * --fail-* inject failures into a chosen share of the generation requests
 * (fault.c draws which; api.c carries them out). --early-stop ends a
 * share of the generation responses early, as at an EOS token (drawn in
 * fault.c too). --reasoning-tokens
 * gives chat responses reasoning content; --embedding-dim sets the size of
 * /v1/embeddings' vectors (route_pool.c).
 *
 * SIGINT and SIGTERM are blocked except inside epoll_pwait(), so the
 * handler (which only sets a flag) can run only while the loop sleeps and
 * the loop always sees the flag right after.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock.h"
#include "tokenizer.h"
#include "util.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	fputs("usage: headroom-mock --listen HOST:PORT [options]\n"
	      "\n"
	      "An inference server simulator: /health, /v1/models, OpenAI-compatible\n"
	      "/v1/chat/completions and /v1/completions (streamed or not, deterministic\n"
	      "output of exactly max_tokens words unless --early-stop ends it, optional\n"
	      "reasoning content), /v1/embeddings, rankings (NIM /v1/ranking, Cohere\n"
	      "/v2/rerank and /v1/rerank, TEI /rerank), embeddings (Cohere /v2/embed,\n"
	      "TEI /embed), TGI /generate and /generate_stream, vLLM\n"
	      "/inference/v1/generate, SGLang /generate, OpenAI Responses\n"
	      "/v1/responses, Anthropic Messages /v1/messages, pictures and audio in\n"
	      "chat messages, audio transcription /v1/audio/transcriptions, image\n"
	      "generation /v1/images/generations (streamed or not) and edit\n"
	      "/v1/images/edits, NIM image retrieval /v1/infer, and vLLM's multimodal\n"
	      "embeddings (/v1/embeddings with messages).\n"
	      "\n"
	      "  --listen HOST:PORT      address to serve (port 0: any free port)\n"
	      "  --ttft-ms MS            time to first token (default 0); with the load\n"
	      "                          model, the fixed part of each sequence's prefill\n"
	      "  --itl-ms MS             time between streamed chunks (default 0); not\n"
	      "                          with the load model\n"
	      "  --model NAME            model name to report (default mock-model)\n"
	      "  --tokens-per-chunk N    tokens in each streamed chunk (default 1)\n"
	      "  --reasoning-tokens N    chat, responses, messages: the first N tokens of\n"
	      "                          each response (at most max_tokens) are reasoning\n"
	      "                          (reasoning_content, a reasoning summary, a thinking\n"
	      "                          block; default: no reasoning), counted in the\n"
	      "                          output tokens and in reasoning_tokens\n"
	      "  --early-stop F          end this share (0 to 1) of the generation responses\n"
	      "                          early, as a model emitting EOS would: half their\n"
	      "                          max tokens (at least 1, at least min_tokens),\n"
	      "                          finish_reason \"stop\" (TGI: \"eos_token\"), usage\n"
	      "                          counting what was produced; never a request with\n"
	      "                          \"ignore_eos\": true or min_tokens >= its max tokens.\n"
	      "                          Response n's draw depends on --fail-seed and n\n"
	      "                          only, apart from the failure draw (default 0)\n"
	      "  --embedding-dim N       /v1/embeddings vector size, 1 to 16384 (default 32)\n"
	      "  --api-key KEY           POSTs must send \"Authorization: Bearer KEY\" or\n"
	      "                          \"x-api-key: KEY\" (else 401)\n"
	      "  --media-dir DIR         write the media parts of chat requests there, as\n"
	      "                          received (a test's view of what was sent): N.image\n"
	      "                          the image URL, N.audio.FORMAT the base64 data; the\n"
	      "                          first 4096 parts only\n"
	      "  --tokenizer FILE        count prompt tokens (usage.prompt_tokens) with this\n"
	      "                          tokenizer (tokenizer.json, .tiktoken, tiktoken JSON)\n"
	      "                          instead of one per whitespace-separated word\n"
	      "  --quiet                 log nothing but fatal errors\n"
	      "  --help                  this text\n"
	      "  --version               print the version\n"
	      "\n"
	      "Load model (continuous batching; on when any of these is given):\n"
	      "  --max-batch N           at most N sequences run at once, the rest wait\n"
	      "                          in a FIFO queue (default: no bound)\n"
	      "  --prefill-ms-per-1k MS  prefill time per 1000 prompt tokens (default 0)\n"
	      "  --decode-ms MS          fixed time of each engine step (default 0)\n"
	      "  --decode-ms-per-seq MS  time each running sequence adds to a step\n"
	      "                          (default 0)\n"
	      "  An engine step gives every running sequence one token and lasts\n"
	      "    decode-ms + decode-ms-per-seq * running\n"
	      "      + sum over sequences admitted by it of\n"
	      "        (ttft-ms + prefill-ms-per-1k * prompt_tokens / 1000)\n"
	      "  so TTFT grows with queueing and others' prefills, ITL with the batch.\n"
	      "\n"
	      "Telemetry (GET /metrics: a vLLM-like Prometheus page that follows the load):\n"
	      "  --kv-capacity-tokens N  notional KV cache size in tokens, for\n"
	      "                          vllm:gpu_cache_usage_perc (default 100000)\n"
	      "  --dcgm-listen HOST:PORT also serve a DCGM-exporter-like GET /metrics\n"
	      "                          of simulated GPUs there (port 0: any free port)\n"
	      "  --gpus N                simulated GPUs on that page, 1 to 64 (default 1)\n"
	      "\n"
	      "Failure injection (every POST endpoint, streamed or not; default none):\n"
	      "  --fail-429 P            answer this share of requests 429 with Retry-After\n"
	      "  --fail-500 P            answer this share 500\n"
	      "  --fail-reset P          reset the connection halfway through the response\n"
	      "  --fail-malformed P      send an event (or a body) that is not valid JSON\n"
	      "                          halfway through\n"
	      "  --fail-stall P          stop sending halfway through, for --stall-ms\n"
	      "  --stall-ms MS           length of a stall (default: until the client\n"
	      "                          gives up)\n"
	      "  --fail-seed N           seed of the draw, and of --early-stop's (default 0)\n"
	      "  Each P is from 0 to 1 and they add up to at most 1. Request n (the n of\n"
	      "  its chatcmpl-mock-n id; every POST endpoint counts) draws its outcome\n"
	      "  from the seed and n alone.\n"
	      "\n"
	      "Prints \"listening on HOST:PORT\" on stdout once it accepts connections,\n"
	      "then \"dcgm listening on HOST:PORT\" with --dcgm-listen.\n",
	      f);
}

static int parse_ms(const char *opt, const char *s, int64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > MOCK_MAX_DELAY_MS) {
		fprintf(stderr, "headroom-mock: %s wants milliseconds from 0 to %.0f, not '%s'\n",
		        opt, MOCK_MAX_DELAY_MS, s);
		return -1;
	}
	*ns = llround(v * 1e6);
	return 0;
}

/* Milliseconds, as nanoseconds, not rounded (a per-token or per-sequence rate). */
static int parse_ms_rate(const char *opt, const char *s, double *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > MOCK_MAX_DELAY_MS) {
		fprintf(stderr, "headroom-mock: %s wants milliseconds from 0 to %.0f, not '%s'\n",
		        opt, MOCK_MAX_DELAY_MS, s);
		return -1;
	}
	*ns = v * 1e6;
	return 0;
}

/* A probability: a number from 0 to 1. */
static int parse_prob(const char *opt, const char *s, double *p)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1) {
		fprintf(stderr, "headroom-mock: %s wants a probability from 0 to 1, not '%s'\n",
		        opt, s);
		return -1;
	}
	*p = v;
	return 0;
}

/* A whole number from 1 to max, decimal digits only. */
static int parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	if (*s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_config(int argc, char **argv, struct mock_config *cfg)
{
	enum {
		OPT_LISTEN = 1,
		OPT_TTFT,
		OPT_ITL,
		OPT_MODEL,
		OPT_TPC,
		OPT_QUIET,
		OPT_HELP,
		OPT_MAX_BATCH,
		OPT_PREFILL,
		OPT_DECODE,
		OPT_DECODE_SEQ,
		OPT_KV,
		OPT_DCGM,
		OPT_GPUS,
		OPT_FAIL_429,
		OPT_FAIL_500,
		OPT_FAIL_RESET,
		OPT_FAIL_MALFORMED,
		OPT_FAIL_STALL,
		OPT_STALL_MS,
		OPT_FAIL_SEED,
		OPT_TOKENIZER,
		OPT_REASONING,
		OPT_EMBED_DIM,
		OPT_API_KEY,
		OPT_EARLY_STOP,
		OPT_MEDIA_DIR,
		OPT_VERSION,
	};
	static const struct option opts[] = {
	    {"listen", required_argument, NULL, OPT_LISTEN},
	    {"ttft-ms", required_argument, NULL, OPT_TTFT},
	    {"itl-ms", required_argument, NULL, OPT_ITL},
	    {"model", required_argument, NULL, OPT_MODEL},
	    {"tokens-per-chunk", required_argument, NULL, OPT_TPC},
	    {"quiet", no_argument, NULL, OPT_QUIET},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {"max-batch", required_argument, NULL, OPT_MAX_BATCH},
	    {"prefill-ms-per-1k", required_argument, NULL, OPT_PREFILL},
	    {"decode-ms", required_argument, NULL, OPT_DECODE},
	    {"decode-ms-per-seq", required_argument, NULL, OPT_DECODE_SEQ},
	    {"kv-capacity-tokens", required_argument, NULL, OPT_KV},
	    {"dcgm-listen", required_argument, NULL, OPT_DCGM},
	    {"gpus", required_argument, NULL, OPT_GPUS},
	    {"fail-429", required_argument, NULL, OPT_FAIL_429},
	    {"fail-500", required_argument, NULL, OPT_FAIL_500},
	    {"fail-reset", required_argument, NULL, OPT_FAIL_RESET},
	    {"fail-malformed", required_argument, NULL, OPT_FAIL_MALFORMED},
	    {"fail-stall", required_argument, NULL, OPT_FAIL_STALL},
	    {"stall-ms", required_argument, NULL, OPT_STALL_MS},
	    {"fail-seed", required_argument, NULL, OPT_FAIL_SEED},
	    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
	    {"api-key", required_argument, NULL, OPT_API_KEY},
	    {"reasoning-tokens", required_argument, NULL, OPT_REASONING},
	    {"embedding-dim", required_argument, NULL, OPT_EMBED_DIM},
	    {"early-stop", required_argument, NULL, OPT_EARLY_STOP},
	    {"media-dir", required_argument, NULL, OPT_MEDIA_DIR},
	    {NULL, 0, NULL, 0},
	};
	memset(cfg, 0, sizeof(*cfg));
	cfg->model = "mock-model";
	cfg->tokens_per_chunk = 1;
	cfg->kv_capacity_tokens = MOCK_DEFAULT_KV_TOKENS;
	cfg->gpus = 1;
	cfg->stall_ns = MOCK_NEVER;
	cfg->embedding_dim = MOCK_DEFAULT_EMBED_DIM;
	bool have_listen = false;
	char err[HR_ERRLEN];
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case OPT_LISTEN:
			if (parse_hostport(optarg, cfg->host, &cfg->port, err) < 0) {
				fprintf(stderr, "headroom-mock: --listen: %s\n", err);
				return -1;
			}
			have_listen = true;
			break;
		case OPT_TTFT:
			if (parse_ms("--ttft-ms", optarg, &cfg->ttft_ns) < 0)
				return -1;
			break;
		case OPT_ITL:
			if (parse_ms("--itl-ms", optarg, &cfg->itl_ns) < 0)
				return -1;
			cfg->itl_given = true;
			break;
		case OPT_MAX_BATCH: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > MOCK_MAX_BATCH) {
				fprintf(stderr,
				        "headroom-mock: --max-batch wants 1 to %d sequences, not "
				        "'%s'\n",
				        MOCK_MAX_BATCH, optarg);
				return -1;
			}
			cfg->max_batch = (uint32_t)v;
			cfg->load = true;
			break;
		}
		case OPT_PREFILL: {
			double per_1k;
			if (parse_ms_rate("--prefill-ms-per-1k", optarg, &per_1k) < 0)
				return -1;
			cfg->prefill_ns_per_token = per_1k / 1000;
			cfg->load = true;
			break;
		}
		case OPT_DECODE:
			if (parse_ms_rate("--decode-ms", optarg, &cfg->decode_ns) < 0)
				return -1;
			cfg->load = true;
			break;
		case OPT_DECODE_SEQ:
			if (parse_ms_rate("--decode-ms-per-seq", optarg, &cfg->decode_ns_per_seq) <
			    0)
				return -1;
			cfg->load = true;
			break;
		case OPT_MODEL:
			if (!optarg[0] || strlen(optarg) > MOCK_MAX_MODEL_NAME) {
				fprintf(stderr, "headroom-mock: --model wants 1 to %d bytes\n",
				        MOCK_MAX_MODEL_NAME);
				return -1;
			}
			cfg->model = optarg;
			break;
		case OPT_TPC: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 ||
			    v > MOCK_MAX_TOKENS_PER_CHUNK) {
				fprintf(
				    stderr,
				    "headroom-mock: --tokens-per-chunk wants 1 to %d, not '%s'\n",
				    MOCK_MAX_TOKENS_PER_CHUNK, optarg);
				return -1;
			}
			cfg->tokens_per_chunk = (unsigned)v;
			break;
		}
		case OPT_KV: {
			unsigned long long v;
			if (parse_count(optarg, MOCK_MAX_KV_TOKENS, &v) < 0) {
				fprintf(stderr,
				        "headroom-mock: --kv-capacity-tokens wants 1 to %llu, not "
				        "'%s'\n",
				        (unsigned long long)MOCK_MAX_KV_TOKENS, optarg);
				return -1;
			}
			cfg->kv_capacity_tokens = v;
			break;
		}
		case OPT_DCGM:
			if (parse_hostport(optarg, cfg->dcgm_host, &cfg->dcgm_port, err) < 0) {
				fprintf(stderr, "headroom-mock: --dcgm-listen: %s\n", err);
				return -1;
			}
			cfg->dcgm = true;
			break;
		case OPT_GPUS: {
			unsigned long long v;
			if (parse_count(optarg, MOCK_MAX_GPUS, &v) < 0) {
				fprintf(stderr, "headroom-mock: --gpus wants 1 to %d, not '%s'\n",
				        MOCK_MAX_GPUS, optarg);
				return -1;
			}
			cfg->gpus = (unsigned)v;
			break;
		}
		case OPT_FAIL_429:
		case OPT_FAIL_500:
		case OPT_FAIL_RESET:
		case OPT_FAIL_MALFORMED:
		case OPT_FAIL_STALL: {
			enum mock_fault f = (enum mock_fault)(FAULT_429 + (o - OPT_FAIL_429));
			char opt[32];
			snprintf(opt, sizeof(opt), "--fail-%s", fault_name(f));
			if (parse_prob(opt, optarg, &cfg->fail_p[f]) < 0)
				return -1;
			break;
		}
		case OPT_EARLY_STOP:
			if (parse_prob("--early-stop", optarg, &cfg->early_stop) < 0)
				return -1;
			break;
		case OPT_STALL_MS:
			if (parse_ms("--stall-ms", optarg, &cfg->stall_ns) < 0)
				return -1;
			break;
		case OPT_FAIL_SEED: {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || errno || *end) {
				fprintf(stderr,
				        "headroom-mock: --fail-seed wants a whole number from 0 to "
				        "%llu, not '%s'\n",
				        (unsigned long long)UINT64_MAX, optarg);
				return -1;
			}
			cfg->fail_seed = v;
			break;
		}
		case OPT_API_KEY:
			if (!*optarg || strpbrk(optarg, " \t\r\n")) {
				fprintf(stderr, "headroom-mock: --api-key wants a key without spaces\n");
				return -1;
			}
			cfg->api_key = optarg;
			break;
		case OPT_TOKENIZER: {
			char terr[HR_ERRLEN];
			tok_free(cfg->tokenizer);
			cfg->tokenizer = NULL;
			if (tok_load(optarg, &cfg->tokenizer, terr) < 0) {
				fprintf(stderr, "headroom-mock: --tokenizer: %s\n", terr);
				return -1;
			}
			break;
		}
		case OPT_REASONING: {
			unsigned long long v;
			/* 0 is allowed: the fields are there, with no reasoning */
			if (strcmp(optarg, "0") == 0) {
				v = 0;
			} else if (parse_count(optarg, HR_MAX_OSL, &v) < 0) {
				fprintf(
				    stderr,
				    "headroom-mock: --reasoning-tokens wants 0 to %d, not '%s'\n",
				    HR_MAX_OSL, optarg);
				return -1;
			}
			cfg->reasoning = true;
			cfg->reasoning_tokens = (uint32_t)v;
			break;
		}
		case OPT_EMBED_DIM: {
			unsigned long long v;
			if (parse_count(optarg, MOCK_MAX_EMBED_DIM, &v) < 0) {
				fprintf(stderr,
				        "headroom-mock: --embedding-dim wants 1 to %d, not '%s'\n",
				        MOCK_MAX_EMBED_DIM, optarg);
				return -1;
			}
			cfg->embedding_dim = (uint32_t)v;
			break;
		}
		case OPT_MEDIA_DIR:
			cfg->media_dir = optarg;
			break;
		case OPT_QUIET:
			cfg->quiet = true;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			puts("headroom-mock " HEADROOM_VERSION " (" HEADROOM_COMMIT ")");
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "headroom-mock: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (cfg->load && cfg->itl_given) {
		fprintf(stderr, "headroom-mock: --itl-ms is the fixed gap of the simple model and "
		                "contradicts the load model (--max-batch, --prefill-ms-per-1k, "
		                "--decode-ms, --decode-ms-per-seq); give the step time with "
		                "--decode-ms instead\n");
		return -1;
	}
	double sum = 0;
	for (int f = FAULT_429; f < FAULT__COUNT; f++)
		sum += cfg->fail_p[f];
	if (sum > 1 + 1e-9) {
		fprintf(stderr,
		        "headroom-mock: --fail-429, --fail-500, --fail-reset, --fail-malformed and "
		        "--fail-stall add up to %g; at most 1\n",
		        sum);
		return -1;
	}
	cfg->faults = sum > 0;
	if (!have_listen) {
		fprintf(stderr, "headroom-mock: --listen HOST:PORT is required\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct mock_config cfg;
	if (parse_config(argc, argv, &cfg) < 0) {
		tok_free(cfg.tokenizer);
		return 2;
	}
	openai_use_tokenizer(cfg.tokenizer);

	sigset_t block, run_mask;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &run_mask);
	sigdelset(&run_mask, SIGINT);
	sigdelset(&run_mask, SIGTERM);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct server srv;
	char bound[1100], dbound[1100]; /* NI_MAXHOST, brackets, port */
	char err[HR_ERRLEN];
	if (server_open(&srv, &cfg, bound, sizeof(bound), dbound, sizeof(dbound), err) < 0) {
		fprintf(stderr, "headroom-mock: %s\n", err);
		server_close(&srv);
		tok_free(cfg.tokenizer);
		return 1;
	}
	printf("listening on %s\n", bound);
	if (cfg.dcgm)
		printf("dcgm listening on %s\n", dbound);
	fflush(stdout);
	if (!cfg.quiet && !cfg.load)
		fprintf(
		    stderr,
		    "headroom-mock: model %s, ttft %.3f ms, itl %.3f ms, %u token(s) per chunk\n",
		    cfg.model, (double)cfg.ttft_ns / 1e6, (double)cfg.itl_ns / 1e6,
		    cfg.tokens_per_chunk);
	if (!cfg.quiet && cfg.load) {
		char batch[32] = "unbounded";
		if (cfg.max_batch)
			snprintf(batch, sizeof(batch), "%u", cfg.max_batch);
		fprintf(stderr,
		        "headroom-mock: model %s, load model: max batch %s, step %.3f ms + "
		        "%.3f ms per sequence, prefill %.3f ms + %.3f ms per 1k prompt tokens, "
		        "%u token(s) per chunk\n",
		        cfg.model, batch, cfg.decode_ns / 1e6, cfg.decode_ns_per_seq / 1e6,
		        (double)cfg.ttft_ns / 1e6, cfg.prefill_ns_per_token * 1000 / 1e6,
		        cfg.tokens_per_chunk);
	}

	if (!cfg.quiet && cfg.reasoning)
		fprintf(stderr, "headroom-mock: chat reasoning: %u token(s) before the content\n",
		        cfg.reasoning_tokens);

	if (!cfg.quiet && cfg.early_stop > 0)
		fprintf(stderr, "headroom-mock: early stop: %g of the responses, seed %llu\n",
		        cfg.early_stop, (unsigned long long)cfg.fail_seed);

	if (!cfg.quiet && cfg.faults) {
		char stall[64] = "until the client gives up";
		if (cfg.stall_ns != MOCK_NEVER)
			snprintf(stall, sizeof(stall), "%.3f ms", (double)cfg.stall_ns / 1e6);
		fprintf(
		    stderr,
		    "headroom-mock: injecting failures: 429 %g, 500 %g, reset %g, malformed %g, "
		    "stall %g (%s), seed %llu\n",
		    cfg.fail_p[FAULT_429], cfg.fail_p[FAULT_500], cfg.fail_p[FAULT_RESET],
		    cfg.fail_p[FAULT_MALFORMED], cfg.fail_p[FAULT_STALL], stall,
		    (unsigned long long)cfg.fail_seed);
	}

	int rc = server_run(&srv, &stop_flag, &run_mask);
	if (!cfg.quiet)
		fprintf(stderr, "headroom-mock: stopping after %llu request(s), %llu streamed\n",
		        (unsigned long long)srv.nrequests, (unsigned long long)srv.nstreams);
	if (!cfg.quiet && cfg.faults)
		fprintf(stderr,
		        "headroom-mock: injected 429 %llu, 500 %llu, reset %llu, malformed %llu, "
		        "stall %llu\n",
		        (unsigned long long)srv.faults[FAULT_429],
		        (unsigned long long)srv.faults[FAULT_500],
		        (unsigned long long)srv.faults[FAULT_RESET],
		        (unsigned long long)srv.faults[FAULT_MALFORMED],
		        (unsigned long long)srv.faults[FAULT_STALL]);
	server_close(&srv);
	tok_free(cfg.tokenizer);
	return rc < 0 ? 1 : 0;
}
