/* mock.h - the types headroom-mock's files share: configuration, the timing
 * model, connections with their one in-progress response, the server, and
 * the functions each file exports.
 *
 *   main.c       command line, signals, start and stop
 *   mock.c       the epoll event loop: sockets, connections, timers
 *   http.c       HTTP/1.1 request parsing and response framing
 *   api.c        the endpoints: routing, the response machinery every
 *                route shares (steps, SSE framing, failures), the mock's words
 *   routes.c     the table of route handlers, one per API (struct mock_handler)
 *   route_openai.c  OpenAI-compatible chat and text completions (with
 *                reasoning content)
 *   route_tgi.c  Hugging Face TGI /generate and /generate_stream
 *   route_native.c  vLLM's /inference/v1/generate and SGLang's /generate
 *   route_pool.c embeddings and rankings (OpenAI, NIM, Cohere, TEI)
 *   route_llm.c  OpenAI Responses and Anthropic Messages (typed events)
 *   model.c      when each generated chunk is due: fixed TTFT/ITL, or the
 *                load model (an engine loop of continuous batching)
 *   telemetry.c  Prometheus pages that follow the simulated load: vLLM-like
 *                /metrics, and a DCGM-exporter-like page of simulated GPUs
 *   fault.c      injected failures: which generation request gets which,
 *                and which ends early (--early-stop)
 *   genreq.c     the usual chat and completion bodies read in one pass
 */
#ifndef HR_MOCK_H
#define HR_MOCK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "hrlimits.h"

struct tok; /* tokenizer.h */

/* The Server header of every answer (a benchmark's card names the server). */
#define MOCK_SERVER "headroom-mock/" HEADROOM_VERSION

/* Bounds of the mock beyond those in hrlimits.h. */
#define MOCK_MAX_HEADER_BYTES (16u << 10) /* request line + headers -> 431 */
#define MOCK_MAX_HEADERS 100              /* header lines per request -> 431 */
#define MOCK_OUT_HIGH_WATER (256u << 10)  /* stop generating while this much output waits */
#define MOCK_OUT_MAX ((size_t)HR_MAX_RESPONSE_BYTES) /* a connection's output buffer */
#define MOCK_MAX_MODEL_NAME 256
#define MOCK_MAX_TOKENS_PER_CHUNK 4096
#define MOCK_MAX_DELAY_MS (HR_MAX_TIMEOUT_S * 1000.0)
#define MOCK_LINGER_NS 2000000000LL       /* wait for the peer's FIN after we close */
#define MOCK_LINGER_MAX_BYTES (64u << 20) /* input discarded while lingering */
#define MOCK_MAX_BATCH HR_MOCK_MAX_CONNS  /* --max-batch upper bound */
#define MOCK_NEVER INT64_MAX              /* next_ns: not scheduled; the model wakes it */
#define MOCK_MAX_GPUS 64                  /* --gpus upper bound */
#define MOCK_DEFAULT_KV_TOKENS 100000     /* --kv-capacity-tokens */
#define MOCK_MAX_KV_TOKENS 1000000000000ULL
#define MOCK_HIST_BUCKETS 16              /* finite buckets of a histogram */
#define MOCK_RETRY_AFTER_S 1              /* Retry-After of an injected 429 */
#define MOCK_DEFAULT_EMBED_DIM 32         /* --embedding-dim */
#define MOCK_MAX_EMBED_DIM 16384          /* --embedding-dim and "dimensions" */
#define MOCK_MAX_EMBED_INPUTS 2048        /* items of an embeddings "input" (OpenAI's bound) */
#define MOCK_MAX_EMBED_VALUES (1u << 21)  /* inputs * dimension: the body stays under 64 MiB */
#define MOCK_MAX_TGI_DETAIL_TOKENS 500000 /* /generate with details: tokens listed */

/* An injected reset waits at most this long for its output to reach the
 * peer, looking every MOCK_RESET_POLL_NS. */
#define MOCK_RESET_WAIT_NS 2000000000LL
#define MOCK_RESET_POLL_NS 1000000LL

/* An injected failure (docs/mock.md, "Failure injection"), drawn per
 * generation request; the order is the order of the draw's intervals. */
enum mock_fault {
	FAULT_NONE,
	FAULT_429,       /* 429 with Retry-After, at once */
	FAULT_500,       /* 500, at once */
	FAULT_RESET,     /* the connection is reset halfway through the response */
	FAULT_MALFORMED, /* an event (or body) that is not valid JSON */
	FAULT_STALL,     /* the output stops halfway for --stall-ms, or for good */
	FAULT__COUNT
};

struct mock_config {
	char host[256];
	int port;
	int64_t ttft_ns;
	int64_t itl_ns;
	bool itl_given; /* --itl-ms was on the command line */
	/* The load model (docs/mock.md): on when any of its flags is given. */
	bool load;
	uint32_t max_batch;          /* --max-batch; 0: no bound */
	double prefill_ns_per_token; /* --prefill-ms-per-1k */
	double decode_ns;            /* --decode-ms */
	double decode_ns_per_seq;    /* --decode-ms-per-seq */
	const char *model;           /* served model name (argv or default) */
	unsigned tokens_per_chunk;
	bool quiet;
	/* telemetry (telemetry.c) */
	uint64_t kv_capacity_tokens; /* --kv-capacity-tokens: notional KV cache size */
	bool dcgm;                   /* --dcgm-listen given */
	char dcgm_host[256];
	int dcgm_port;
	unsigned gpus; /* --gpus: simulated GPUs on the DCGM page */
	/* failure injection (fault.c) */
	double fail_p[FAULT__COUNT]; /* --fail-429 ... --fail-stall; [FAULT_NONE] unused */
	bool faults;                 /* any of them above 0 */
	uint64_t fail_seed;          /* --fail-seed (also seeds the --early-stop draw) */
	double early_stop;           /* --early-stop: share of responses that end early */
	int64_t stall_ns;            /* --stall-ms; MOCK_NEVER: until the client leaves */
	struct tok *tokenizer;       /* --tokenizer: prompt tokens counted with it, else words */
	const char *api_key;         /* --api-key: POSTs need "Authorization: Bearer KEY"
	                              * (or "x-api-key: KEY") */
	/* more endpoints (route_pool.c, route_openai.c) */
	uint32_t embedding_dim;    /* --embedding-dim: vector size of /v1/embeddings */
	bool reasoning;            /* --reasoning-tokens given */
	uint32_t reasoning_tokens; /* chat: reasoning tokens before the content */
	const char *media_dir;     /* --media-dir: chat's media parts written there, or NULL */
};

/* The API a response speaks. Chat, completions, TGI, transcription and the
 * image generation and edit routes generate tokens (steps; streamed or
 * not); the others (struct mock_handler's pool) are answered whole after
 * one prefill-only step. */
enum mock_api {
	API_CHAT,        /* POST /v1/chat/completions */
	API_COMPLETION,  /* POST /v1/completions */
	API_TGI,         /* POST /generate, /generate_stream */
	API_EMBED,       /* POST /v1/embeddings */
	API_RANK_NIM,    /* POST /v1/ranking */
	API_RANK_COHERE, /* POST /v2/rerank, /v1/rerank */
	API_RANK_TEI,    /* POST /rerank */
	API_EMBED_COHERE, /* POST /v2/embed, /v1/embed */
	API_EMBED_TEI,    /* POST /embed */
	API_VLLM_GEN,     /* POST /inference/v1/generate (vLLM, token ids) */
	API_SGLANG_GEN,   /* POST /generate with "text" or "input_ids" (SGLang) */
	API_RESPONSES,   /* POST /v1/responses (OpenAI Responses) */
	API_MESSAGES,    /* POST /v1/messages (Anthropic Messages) */
	API_TRANSCRIBE,  /* POST /v1/audio/transcriptions (multipart upload) */
	API_IMAGE_GEN,   /* POST /v1/images/generations */
	API_IMAGE_EDIT,  /* POST /v1/images/edits (multipart upload) */
	API_IMAGE_RETRIEVAL, /* POST /v1/infer (NVIDIA NIM) */
	API_CHAT_EMBED,  /* POST /v1/embeddings with "messages" (vLLM chat embeddings) */
	API__COUNT
};

struct pool_req; /* route_pool.c: a parsed embeddings or rankings request */

/* The response a connection is producing. Generation is step-wise even
 * when the response is not streamed: each step ("chunk") produces up to
 * tokens_per_chunk tokens at the time the timing model says; a streamed
 * response sends one SSE event per step, a plain one sends its body after
 * the last step. */
struct stream {
	bool active;
	bool sse;           /* "stream": true */
	uint8_t api;        /* enum mock_api */
	bool pool;          /* embeddings or rankings: one step, no generated tokens */
	bool include_usage; /* stream_options.include_usage */
	bool chunked;       /* Transfer-Encoding: chunked (not for HTTP/1.0) */
	uint32_t prompt_tokens;
	uint32_t max_tokens; /* completion tokens to produce (fewer when eos) */
	uint32_t sent;       /* tokens produced so far */
	uint32_t chunks;     /* steps done so far */
	uint64_t id;
	int64_t created;  /* Unix seconds */
	int64_t start_ns; /* monotonic time the request was taken */
	int64_t next_ns;  /* monotonic time the next step is due; MOCK_NEVER: not yet known */
	int64_t due_ns;   /* when the last step produced was due (for /metrics) */
	/* the load model's sequence (model.c); all zero when it is off */
	struct stream *eprev, *enext; /* in the model's waiting or running list */
	uint32_t produced;            /* tokens the engine has generated */
	uint8_t phase;                /* enum seq_phase */
	/* an injected failure (fault.c) */
	uint8_t fault;   /* enum mock_fault still to come; FAULT_NONE once it happened */
	int64_t hold_ns; /* a stall: nothing is sent before this (MOCK_NEVER: never) */
	bool cut_body;   /* a body that is not streamed goes out cut in half */
	/* per API */
	bool eos;            /* --early-stop: ends early, finish_reason "stop" */
	uint32_t reasoning;  /* chat: the first `reasoning` tokens are reasoning content */
	uint32_t evseq;      /* Responses: the next event's sequence_number */
	bool tgi_details;    /* TGI: "details" */
	bool tgi_seed_given; /* TGI: "seed" given, reported in the details */
	uint64_t tgi_seed;
	char *tgi_prefix; /* TGI return_full_text: a copy of the inputs, or NULL */
	size_t tgi_prefix_len;
	uint16_t img_n, img_w, img_h; /* images: pictures to answer, their size */
	uint16_t img_partial;         /* images, streamed: partial pictures before the last */
	struct pool_req *pq; /* embeddings and rankings: the request, for the body */
};

enum seq_phase {
	SEQ_NONE,    /* not in the engine (load model off, or max_tokens 0) */
	SEQ_WAITING, /* in the FIFO queue for a batch slot */
	SEQ_RUNNING, /* holds a batch slot: prefill, then one token per step */
	SEQ_DONE,    /* all tokens generated, slot freed; the response may still be sending */
};

struct conn {
	int fd;
	uint32_t events;     /* epoll interest registered now */
	size_t heap_idx;     /* position in the timer heap, or MOCK_NO_HEAP */
	int64_t deadline_ns; /* key in the timer heap */
	struct dynbuf in;    /* received bytes; in_off of them already consumed */
	size_t in_off;
	struct dynbuf out; /* bytes to send; out_off of them already sent */
	size_t out_off;
	struct stream st;
	/* the head of the streamed response's events, rendered once (route_openai.c) */
	struct dynbuf ev_head;
	size_t lingered;    /* bytes discarded while lingering */
	bool peer_eof;      /* the peer has shut down its sending side */
	bool close_after;   /* close once the current response is sent */
	bool sent_continue; /* "100 Continue" sent for the request being read */
	bool more;          /* stopped with work left: come back when writable */
	bool lingering;     /* we have shut down our side; waiting for the peer's */
	bool head;          /* the request being answered is HEAD: no body */
	bool overflow;      /* output buffer bound reached: internal error */
	bool dead;          /* closed; freed after the current event batch */
	bool dcgm;          /* accepted on the DCGM listener: serves only its page */
	bool reset;         /* an injected reset: send the output, then abort */
	int64_t reset_by;   /* when the reset happens at the latest; 0: not yet known */
	struct conn *prev, *next;
};

#define MOCK_NO_HEAP ((size_t)-1)

/* The timing model: when each step of each response is due.
 *
 * Off (the default), every response runs on its own: the first step TTFT
 * after the request, each next one ITL after the previous one.
 *
 * On (load), an engine loop of continuous batching: at most max_batch
 * sequences run, the rest wait in a FIFO. The engine runs steps back to
 * back while anything runs; a step is formed when it starts (admitting
 * from the queue into free slots) and gives every running sequence one
 * token when it ends. Its length is
 *   decode + decode_per_seq * running + sum over admitted (ttft + prefill * prompt)
 * so a sequence's first token comes at the end of the step that admitted
 * it. Tokens are due when their step ends; the model sets the stream's
 * next_ns then and calls wake() so that the server reschedules it.
 *
 * The gauges (running, waiting, kv_tokens, the two token totals) are kept
 * in both modes, for the /metrics pages (telemetry.c); load_changed() is
 * called just before `running` changes, so that the simulated GPUs' energy
 * can be integrated over time at the old load. */
struct model {
	/* parameters */
	bool load;
	int64_t ttft_ns;
	int64_t itl_ns;
	uint32_t max_batch; /* load: UINT32_MAX when unbounded */
	double prefill_ns_per_token;
	double decode_ns;
	double decode_ns_per_seq;
	unsigned tokens_per_chunk;
	void (*wake)(void *ctx, struct stream *s); /* s->next_ns was set */
	void (*load_changed)(void *ctx);           /* running is about to change */
	void *wake_ctx;                            /* ctx of both */
	/* the engine (load) */
	struct stream *run_head, *run_tail;   /* running sequences */
	struct stream *wait_head, *wait_tail; /* the queue, oldest first */
	bool busy;                            /* a step is in progress */
	int64_t step_start;                   /* monotonic ns */
	int64_t step_end;                     /* when the step in progress ends */
	double step_len;                      /* its length in ns, before rounding */
	/* counts and gauges */
	uint64_t active;                  /* responses between start and end */
	uint64_t active_prompt;           /* their prompt tokens, summed */
	uint64_t running;                 /* sequences generating (load: holding a slot) */
	uint64_t waiting;                 /* sequences queued for a slot (load only) */
	uint64_t kv_tokens;               /* running sequences' prompt + generated tokens */
	uint64_t prompt_tokens_total;     /* prompt tokens prefilled, ever */
	uint64_t generation_tokens_total; /* tokens generated, ever */
	uint64_t steps;                   /* engine steps done (load) */
};

/* A Prometheus histogram: per-bucket (not cumulative) counts. */
struct histogram {
	const double *bounds; /* nb finite upper bounds, ascending */
	unsigned nb;
	uint64_t bucket[MOCK_HIST_BUCKETS + 1]; /* the last: above every bound */
	uint64_t count;
	double sum; /* seconds */
};

/* What the /metrics pages report beyond the model's gauges (telemetry.c). */
struct telemetry {
	struct histogram ttft; /* arrival to first chunk due */
	struct histogram e2e;  /* arrival to last chunk due */
	uint64_t success;      /* responses completed */
	uint64_t stopped;      /* of them, ended early (--early-stop) */
	char *model_label;     /* cfg->model escaped for a label value */
	unsigned gpus;
	int64_t energy_ns;               /* monotonic time energy is integrated to */
	double energy_mj[MOCK_MAX_GPUS]; /* per simulated GPU, since start */
};

struct server {
	const struct mock_config *cfg;
	struct model model;
	struct telemetry tel;
	int epfd;
	int lfd;                /* listening socket */
	int dfd;                /* the DCGM page's listening socket, or -1 */
	int tfd;                /* timerfd armed at the earliest deadline */
	int64_t timer_armed_ns; /* 0: disarmed; -1: fired, to be set again (mock.c) */
	bool accept_paused;
	char *model_json; /* cfg->model as a JSON string literal */
	size_t model_json_len;
	int64_t started;    /* Unix seconds */
	struct conn **heap; /* min-heap on deadline_ns */
	size_t heap_len, heap_cap;
	struct conn *conns;     /* open connections */
	struct conn *graveyard; /* closed during this batch */
	size_t nconns;
	uint64_t next_id;
	uint64_t nrequests;
	uint64_t nstreams;
	/* injected failures by kind */
	uint64_t faults[FAULT__COUNT];
	char *rbuf;            /* recv() scratch */
	struct dynbuf scratch; /* a body or event being formatted */
};

/* mock.c */
/* bound, dbound: the addresses listened on (dbound only with cfg->dcgm). */
int server_open(struct server *srv, const struct mock_config *cfg, char *bound, size_t bound_len,
                char *dbound, size_t dbound_len, char *err);
int server_run(struct server *srv, volatile sig_atomic_t *stop, const sigset_t *run_mask);
void server_close(struct server *srv);

/* http.c */
struct http_request {
	const char *method;
	size_t method_len;
	const char *path; /* without the query */
	size_t path_len;
	const char *body;
	size_t body_len;
	size_t total_len; /* bytes this request takes in the input */
	bool http10;
	bool keep_alive;
	bool expect_continue;
	const char *auth; /* the Authorization header's value (in the input), or NULL */
	size_t auth_len;
	const char *x_api_key; /* the x-api-key header's value (Anthropic's), or NULL */
	size_t x_api_key_len;
	const char *content_type; /* the Content-Type header's value (in the input), or NULL */
	size_t content_type_len;
};

enum http_parse_result {
	HTTP_NEED_MORE, /* header section incomplete */
	HTTP_NEED_BODY, /* headers parsed (req filled), body incomplete */
	HTTP_OK,        /* a whole request */
	HTTP_BAD,       /* *status and *msg set; the connection must close */
};

enum http_parse_result http_parse(const char *buf, size_t len, struct http_request *req,
                                  int *status, const char **msg);
bool http_path_is(const struct http_request *req, const char *path);
bool http_method_is(const struct http_request *req, const char *method);
const char *http_reason(int status);
/* Append to c->out; failure marks c->overflow. */
void out_add(struct conn *c, const void *p, size_t n);
void out_str(struct conn *c, const char *s);
void out_printf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A whole response with Content-Length. extra: more header lines, each
 * ending in CRLF, or NULL. Adds "Connection: close" when c->close_after;
 * leaves out the body when c->head. */
void http_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                  const char *extra);
/* An OpenAI-style JSON error response of type "invalid_request_error". */
void http_error(struct conn *c, int status, const char *msg, const char *extra);
/* The same with another "type". */
void http_error_type(struct conn *c, int status, const char *type, const char *msg,
                     const char *extra);
/* One piece of a streamed body: an HTTP chunk, or raw bytes for HTTP/1.0. */
void http_body_chunk(struct conn *c, bool chunked, const char *p, size_t n);

/* api.c */
void api_handle(struct server *srv, struct conn *c, const struct http_request *req, int64_t now);
/* Produce what is due of c->st by now, while c's output is below the high
 * water mark; clears c->st.active when the response is complete. */
void api_pump(struct server *srv, struct conn *c, int64_t now);
/* Free what a response holds beyond its struct (its kept request); the
 * connection's end calls it too. Safe to call twice. */
void api_stream_free(struct stream *s);

/* A request of a generation endpoint, parsed (by its route handler). */
struct gen_req {
	bool stream;
	bool include_usage;
	uint32_t prompt_tokens;
	uint32_t max_tokens;
	bool details;    /* TGI */
	bool seed_given; /* TGI */
	uint64_t seed;   /* TGI */
	char *prefix;    /* TGI return_full_text: the inputs; owned, moved into the stream */
	size_t prefix_len;
	struct pool_req *pq; /* embeddings, rankings: owned, moved into the stream */
	bool ignore_eos;     /* chat, completions: "ignore_eos": never ends early */
	uint32_t min_tokens; /* chat, completions: "min_tokens": no early end before */
	uint16_t img_n, img_w, img_h; /* images: pictures to answer, their size */
	uint16_t img_partial;         /* images, streamed: partial pictures before the last */
};

struct json_t; /* jansson */
/* Helpers the route handlers share (api.c). */
/* The body as a JSON object, or NULL with a message in err. */
struct json_t *api_load_object(const char *body, size_t len, char *err);
/* Prompt tokens of a text: by --tokenizer, else one per whitespace-separated word. */
uint64_t api_text_tokens(const char *s, size_t n);
/* An optional boolean member `key` of obj (null: absent); name is how errors call it. */
int api_opt_bool(const struct json_t *obj, const char *key, const char *name, bool *out, char *err);
/* The optional integer member key (called name in messages), from lo to hi
 * (hi < 0: no upper bound, then lo must be 0: "a non-negative integer"):
 * 1 with *out set, 0 when absent or null, -1 with a message in err. */
int api_opt_int(const struct json_t *obj, const char *key, const char *name, long long lo,
                long long hi, long long *out, char *err);
/* The optional string member "model". */
int api_check_model(const struct json_t *root, char *err);
/* Token i of s's output: its place in the word list, and the word. */
unsigned api_word_index(const struct stream *s, uint32_t i);
const char *api_word(unsigned idx, size_t *len);
void api_add_words(struct dynbuf *b, const struct stream *s, uint32_t from, uint32_t n);
void api_add_u64(struct dynbuf *b, uint64_t v);
/* s[0..n) (valid UTF-8, from a parsed request) as the inside of a JSON string. */
void api_add_json_text(struct dynbuf *b, const char *s, size_t n);
/* srv->scratch (one event's JSON) to c as an SSE event: "data: JSON\n\n",
 * or "data:JSON\n\n" (TGI's framing) when !space; an HTTP chunk of its
 * own when chunked. */
void api_send_event(struct server *srv, struct conn *c, bool space);
/* A part of an event: n bytes at p, or (p NULL) the n tokens of the
 * response's output from token `from`. */
struct api_piece {
	const char *p;
	size_t n;
	uint32_t from;
};
#define API_PIECE(lit) ((struct api_piece){(lit), sizeof(lit) - 1, 0})
/* One SSE event made of pieces, written straight into c's output with a
 * single reservation: "data: " ("data:" when !space) + the pieces +
 * "\n\n", framed as an HTTP chunk of its own when the response is
 * chunked. The bytes are the same as formatting the event whole and
 * sending it with api_send_event. */
void api_put_event(struct conn *c, bool space, const struct api_piece *pc, size_t np);
/* The same with an "event: NAME" line before the data (typed events of
 * the Responses and Messages APIs), and srv->scratch sent so. */
void api_put_named_event(struct conn *c, const char *name, const struct api_piece *pc,
                         size_t np);
void api_send_named_event(struct server *srv, struct conn *c, const char *name);
/* A string literal appended to a dynbuf. */
#define ADD_LIT(b, lit) dynbuf_add((b), (lit), sizeof(lit) - 1)

/* One route handler per API: everything the mock does differently for one
 * endpoint (ARCHITECTURE.md, "Endpoint handlers"); api.c routes, times,
 * frames and injects failures the same way for all. The table is routes.c's. */
#define MOCK_MAX_ROUTE_PATHS 4
struct mock_path {
	const char *path; /* NULL: no more */
	bool stream;      /* the path streams whatever the body says (TGI's /generate_stream) */
};
struct mock_handler {
	enum mock_api api;
	struct mock_path paths[MOCK_MAX_ROUTE_PATHS]; /* the POST paths it answers */
	bool pool;      /* one step, no generated token, answered whole (embeddings...) */
	/* Optional, for a path another handler also answers (SGLang's and
	 * TGI's /generate): whether this request is this handler's. Handlers
	 * with it are asked first; the first without it takes the rest. */
	bool (*claims)(const struct http_request *req);
	bool reasoning; /* --reasoning-tokens applies (the first tokens are reasoning) */
	/* The request's body into g (zeroed): 0, or -1 with a message in err
	 * (a 400). api: this handler's; stream_path: the path's stream. */
	int (*parse)(struct server *srv, enum mock_api api, bool stream_path,
	             const struct http_request *req, struct gen_req *g, char *err);
	/* Streamed (g.stream): after the SSE head (optional); the events of
	 * the next n tokens (c->st.sent not yet counting them); an injected
	 * malformed event; the events after the last token (optional), before
	 * the body ends. Each formats into srv->scratch and sends with
	 * api_send_event, or writes with api_put_event. */
	void (*stream_start)(struct server *srv, struct conn *c);
	void (*events)(struct server *srv, struct conn *c, uint32_t n);
	void (*malformed)(struct server *srv, struct conn *c);
	void (*events_end)(struct server *srv, struct conn *c);
	/* Not streamed: the whole body into b (reset first), more header lines
	 * (each ending in CRLF) into extra; -1 when it does not fit b. */
	int (*body)(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
	            size_t extra_size);
};
/* The handler of api (enum mock_api), or NULL past the last. */
const struct mock_handler *mock_handler(unsigned api);
extern const struct mock_handler mock_chat, mock_completion, mock_tgi, mock_embed, mock_rank_nim,
    mock_rank_cohere, mock_rank_tei, mock_embed_cohere, mock_embed_tei, mock_vllm_gen,
    mock_sglang_gen, mock_responses, mock_messages, mock_transcribe, mock_image_gen,
    mock_image_edit, mock_image_retrieval, mock_chat_embed;
/* --media-dir: n bytes of a request's media into DIR/K.KIND (the first
 * 4096 files of the process, K counting them). */
void api_save_media(const char *dir, const char *kind, const void *p, size_t n);

/* route_openai.c */
/* A chat (chat) or text completion body read with jansson into g (zeroed
 * by the caller): 0, or -1 with a message in err. */
int api_parse_gen_json(const char *body, size_t len, bool chat, struct gen_req *g, char *err);
/* A chat body's "messages", checked (content parts as chat reads them:
 * image_url and input_audio parts well formed), their text's tokens added
 * to *n: 0, or -1 with a message in err. */
int api_chat_prompt(const struct json_t *root, uint64_t *n, char *err);
/* --media-dir: a chat body's image_url and input_audio parts, saved. */
void api_save_chat_media(const char *dir, const char *body, size_t len);

/* genreq.c */
/* The same reading of the usual bodies in one pass, without jansson: true
 * with g set exactly as api_parse_gen_json() sets it, or false when it
 * leaves the body to api_parse_gen_json() (g untouched then). */
bool gen_parse_fast(const char *body, size_t len, bool chat, struct gen_req *g);

/* route_audio.c: the multipart/form-data reader (bounded: at most
 * FORM_MAX_PARTS parts, a part's header section at most 4 KiB) */
#define FORM_MAX_PARTS 64
#define FORM_MAX_BOUNDARY 70 /* RFC 2046 */
struct form_part {
	const char *name, *filename; /* inside the body; lengths below */
	size_t name_len, filename_len;
	const char *data;
	size_t len;
};
/* The boundary of req's multipart/form-data Content-Type into out
 * (FORM_MAX_BOUNDARY + 1 bytes): 0, or -1 with err. */
int mock_form_boundary(const struct http_request *req, char *out, char *err);
/* The parts of body (FORM_MAX_PARTS room in parts): their count, or -1 with err. */
int mock_form_parse(const char *body, size_t len, const char *b, struct form_part *parts,
                    char *err);
bool mock_form_part_is(const struct form_part *p, const char *name);
bool mock_form_value_is(const struct form_part *p, const char *v);

/* route_pool.c */
void pool_free(struct pool_req *pq);

/* telemetry.c */
#define MOCK_PROM_CTYPE "text/plain; version=0.0.4; charset=utf-8"
void tel_init(struct server *srv, int64_t now);
void tel_free(struct server *srv);
/* model->load_changed: integrate the GPUs' energy up to now at the old load. */
void tel_load_changed(void *ctx);
/* A response's first chunk was due at `due` (or it ended without one). */
void tel_first_chunk(struct server *srv, const struct stream *s, int64_t due);
/* A response completed; its last chunk was due at `due`. */
void tel_finished(struct server *srv, const struct stream *s, int64_t due);
/* The pages, into b (reset first). */
void tel_vllm_page(struct server *srv, struct dynbuf *b);
void tel_dcgm_page(struct server *srv, struct dynbuf *b, int64_t now);

/* fault.c */
/* The failure generation request number n (1, 2, ...; its response id)
 * gets: a pure function of cfg->fail_seed, n and the probabilities. */
enum mock_fault fault_draw(const struct mock_config *cfg, uint64_t n);
const char *fault_name(enum mock_fault f); /* the option's suffix: "429", "reset"... */
/* Whether response n ends early (--early-stop): a pure function of
 * cfg->fail_seed, n and cfg->early_stop, independent of fault_draw(). */
bool early_stop_draw(const struct mock_config *cfg, uint64_t n);
/* SplitMix64's n-th output from state seed (the draw; also the embeddings). */
uint64_t mock_splitmix64(uint64_t seed, uint64_t n);

/* model.c */
void model_init(struct model *m, const struct mock_config *cfg,
                void (*wake)(void *ctx, struct stream *s), void *wake_ctx);
/* A response begins: sets s->next_ns (MOCK_NEVER under the load model: it
 * wakes s when its first chunk is ready). */
void model_stream_start(struct model *m, struct stream *s, int64_t now);
/* When the next step of s is due, now that a step produced n tokens
 * (s->sent and s->chunks count them already); the step was due at
 * s->next_ns. MOCK_NEVER: not known yet, the model will wake s. */
int64_t model_next_ns(struct model *m, struct stream *s, uint32_t n);
/* The response is complete or its connection went away. */
void model_stream_end(struct model *m, struct stream *s);
/* Run the engine up to now: finish the steps that ended by then (waking
 * the streams whose chunks they completed) and start the next ones. */
void model_advance(struct model *m, int64_t now);
/* When the engine next needs model_advance(): the end of the step in
 * progress, or 0 when idle. */
int64_t model_deadline(const struct model *m);

/* Count prompt tokens with tok (borrowed; NULL: whitespace-separated words). */
void openai_use_tokenizer(const struct tok *tok);

#endif
