/* reqpart.h - the parts of request.c the endpoint handlers (ep_*.c,
 * ephandler.h) build with: a request's failure, the answer's text kept for
 * conversations and the tokenizer, usage counts, the prompt and the other
 * texts of a body, and the readers shared by the endpoints whose answers
 * endpoint.c reads. Internal to the worker's request code.
 *
 * Thread affinity: the loop's thread (as request.h).
 */
#ifndef HR_WORKER_REQPART_H
#define HR_WORKER_REQPART_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunkscan.h"
#include "dynbuf.h"
#include "spec.h"

struct req;
struct req_cfg;
struct req_params;

/* SSE event verdicts (nonzero stops sse_feed) */
#define EV_STOP 1 /* data: [DONE] */
#define EV_FAIL 2 /* the request's failure is set */

/* Sets the request's failure (HR_ERR_*) unless one is set already. */
void rq_fail(struct req *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

bool rq_nonempty_str(json_t *v);
/* A token count: an integer in [0, INT32_MAX] at obj.key, else -1. */
int64_t rq_get_count(json_t *obj, const char *key);
/* An OpenAI usage object's counts, kept. */
void rq_take_usage(struct req *r, json_t *usage);
/* A stream's {"error":...} member (NULL or null: none), kept for the message. */
void rq_take_stream_error(struct req *r, json_t *e);
/* The content string kept for the conversation's next turn (when captured)
 * and for the tokenizer's count of the output (when counted). */
void rq_capture_json(struct req *r, json_t *str);
void rq_keep_output(struct req *r, json_t *str);

/* Body parts. rq_add_prompt: the new user prompt (JSON-escaped);
 * rq_add_user_text: the history in text form and the prompt (marked for
 * req_turn); rq_add_item: text k >= 1 besides the prompt between pre and
 * post, its length added to *sum; rq_add_uint: n in decimal; rq_add_count:
 * "KEY":N, ; rq_end_body: c->body_tail (after a ',' when sep). Each
 * returns 0, or -1 when the body would be too long. */
int rq_add_prompt(struct req *r, const struct req_params *p);
int rq_add_user_text(struct req *r, const struct req_params *p);
int rq_add_item(struct req *r, const struct req_params *p, int k, const char *pre,
                const char *post, int64_t *sum);
int rq_add_uint(struct dynbuf *b, int n);
int rq_add_count(struct dynbuf *b, const char *key, int n);
int rq_end_body(struct req *r, bool sep);

/* The members every body has after target.extra_body was merged over them
 * ("model" first when model), serialised once into c->body_tail: a body is
 * "{" + per-request members + "," + these, or only "}" when there are none.
 * Returns 0, or -1 with err. */
int rq_cfg_tail(struct req_cfg *c, const struct spec *s, bool model, char *err);

/* Handler parts for the endpoints endpoint.c reads (TGI, embeddings,
 * rankings, template): a stream event (ephandler.h's event) and a whole
 * answer (its answer; embeddings and rankings: the answer's arrival is
 * the one chunk). */
int rq_ep_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci);
int rq_ep_answer(struct req *r, json_t *j, const json_error_t *je, char **msg);

/* The members after the prompt and the counts: the run's fixed ones
 * (c->body_tail, ending the object), or with a dataset entry's `extra`
 * those of them (c->tail_members) it does not name and then its own.
 * Returns 0 or -1. */
int rq_add_tail(struct req *r, json_t *extra);

/* What a whole answer's reader found (struct ep_facts), applied to r: the
 * reader's error, the usage, the kept output, and for a one-piece answer
 * its arrival as the one chunk. Returns an HR_ERR_* (message in *msg). */
struct ep_facts;
int rq_take_answer(struct req *r, const struct ep_facts *f, char **msg);

/* What a streamed media event's reader found (struct mr_facts,
 * mediaread.h) as the event's chunk_info, its failure (EV_FAIL) or its
 * "error" member taken; the endpoint then keeps what is its own. */
struct mr_facts;
int rq_media_event(struct req *r, const struct mr_facts *f, struct chunk_info *ci);

#endif
