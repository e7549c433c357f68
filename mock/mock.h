/* mock.h - the types headroom-mock's files share: configuration, the timing
 * model, connections with their one in-progress response, the server, and
 * the functions each file exports.
 *
 *   main.c    command line, signals, start and stop
 *   mock.c    the epoll event loop: sockets, connections, timers
 *   http.c    HTTP/1.1 request parsing and response framing
 *   openai.c  the endpoints: OpenAI-compatible bodies and streamed events
 *   model.c   when each generated chunk is due (fixed TTFT/ITL today)
 */
#ifndef HR_MOCK_H
#define HR_MOCK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "limits.h"

/* Bounds of the mock beyond those in limits.h. */
#define MOCK_MAX_HEADER_BYTES (16u << 10) /* request line + headers -> 431 */
#define MOCK_MAX_HEADERS 100              /* header lines per request -> 431 */
#define MOCK_OUT_HIGH_WATER (256u << 10)  /* stop generating while this much output waits */
#define MOCK_OUT_MAX ((size_t)HR_MAX_RESPONSE_BYTES) /* a connection's output buffer */
#define MOCK_MAX_MODEL_NAME 256
#define MOCK_MAX_TOKENS_PER_CHUNK 4096
#define MOCK_MAX_DELAY_MS (HR_MAX_TIMEOUT_S * 1000.0)
#define MOCK_LINGER_NS 2000000000LL      /* wait for the peer's FIN after we close */
#define MOCK_LINGER_MAX_BYTES (64u << 20) /* input discarded while lingering */

struct mock_config {
	char host[256];
	int port;
	int64_t ttft_ns;
	int64_t itl_ns;
	const char *model;   /* served model name (argv or default) */
	unsigned tokens_per_chunk;
	bool quiet;
};

/* The response a connection is producing. Generation is step-wise even
 * when the response is not streamed: each step ("chunk") produces up to
 * tokens_per_chunk tokens at the time the timing model says; a streamed
 * response sends one SSE event per step, a plain one sends its body after
 * the last step. */
struct stream {
	bool active;
	bool sse;           /* "stream": true */
	bool chat;          /* chat.completion vs text_completion */
	bool include_usage; /* stream_options.include_usage */
	bool chunked;       /* Transfer-Encoding: chunked (not for HTTP/1.0) */
	uint32_t prompt_tokens;
	uint32_t max_tokens; /* completion tokens to produce */
	uint32_t sent;       /* tokens produced so far */
	uint32_t chunks;     /* steps done so far */
	uint64_t id;
	int64_t created;  /* Unix seconds */
	int64_t start_ns; /* monotonic time the request was taken */
	int64_t next_ns;  /* monotonic time the next step is due */
};

struct conn {
	int fd;
	uint32_t events;     /* epoll interest registered now */
	size_t heap_idx;     /* position in the timer heap, or MOCK_NO_HEAP */
	int64_t deadline_ns; /* key in the timer heap */
	struct dynbuf in;    /* received bytes; in_off of them already consumed */
	size_t in_off;
	struct dynbuf out;   /* bytes to send; out_off of them already sent */
	size_t out_off;
	struct stream st;
	size_t lingered;     /* bytes discarded while lingering */
	bool peer_eof;       /* the peer has shut down its sending side */
	bool close_after;    /* close once the current response is sent */
	bool sent_continue;  /* "100 Continue" sent for the request being read */
	bool more;           /* stopped with work left: come back when writable */
	bool lingering;      /* we have shut down our side; waiting for the peer's */
	bool head;           /* the request being answered is HEAD: no body */
	bool overflow;       /* output buffer bound reached: internal error */
	bool dead;           /* closed; freed after the current event batch */
	struct conn *prev, *next;
};

#define MOCK_NO_HEAP ((size_t)-1)

/* The timing model: when each step of each response is due. Every
 * schedule goes through model_next_ns(), so a load model (continuous
 * batching with a max batch, prefill time growing with the prompt, decode
 * time growing with active sequences, queueing) replaces that function
 * and uses the counts kept here. */
struct model {
	int64_t ttft_ns;
	int64_t itl_ns;
	uint64_t active;         /* responses between start and end */
	uint64_t active_prompt;  /* their prompt tokens, summed */
};

struct server {
	const struct mock_config *cfg;
	struct model model;
	int epfd;
	int lfd;                /* listening socket */
	int tfd;                /* timerfd armed at the earliest deadline */
	int64_t timer_armed_ns; /* 0: disarmed */
	bool accept_paused;
	char *model_json;       /* cfg->model as a JSON string literal */
	size_t model_json_len;
	int64_t started;        /* Unix seconds */
	struct conn **heap;     /* min-heap on deadline_ns */
	size_t heap_len, heap_cap;
	struct conn *conns;     /* open connections */
	struct conn *graveyard; /* closed during this batch */
	size_t nconns;
	uint64_t next_id;
	uint64_t nrequests;
	uint64_t nstreams;
	char *rbuf;             /* recv() scratch */
	struct dynbuf scratch;  /* a body or event being formatted */
};

/* mock.c */
int server_open(struct server *srv, const struct mock_config *cfg, char *bound, size_t bound_len,
		char *err);
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
};

enum http_parse_result {
	HTTP_NEED_MORE,  /* header section incomplete */
	HTTP_NEED_BODY,  /* headers parsed (req filled), body incomplete */
	HTTP_OK,         /* a whole request */
	HTTP_BAD,        /* *status and *msg set; the connection must close */
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
/* An OpenAI-style JSON error response. */
void http_error(struct conn *c, int status, const char *msg, const char *extra);
/* One piece of a streamed body: an HTTP chunk, or raw bytes for HTTP/1.0. */
void http_body_chunk(struct conn *c, bool chunked, const char *p, size_t n);

/* openai.c */
void api_handle(struct server *srv, struct conn *c, const struct http_request *req, int64_t now);
/* Produce what is due of c->st by now, while c's output is below the high
 * water mark; clears c->st.active when the response is complete. */
void api_pump(struct server *srv, struct conn *c, int64_t now);

/* model.c */
void model_init(struct model *m, int64_t ttft_ns, int64_t itl_ns);
void model_stream_start(struct model *m, struct stream *s, int64_t now);
/* When the next step of s is due; s->chunks steps are done, the last of
 * them was due at s->next_ns. */
int64_t model_next_ns(const struct model *m, const struct stream *s);
void model_stream_end(struct model *m, struct stream *s);

#endif
