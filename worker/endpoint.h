/* endpoint.h - what the worker needs to know about the endpoints besides
 * chat and completions (docs/worker.md, "Endpoints"): template bodies
 * compiled once, dotted JSON paths, and the reading of embeddings,
 * rankings (NIM, Cohere, TEI), TGI and template answers and stream events.
 *
 * Everything here works on parsed JSON (jansson): these endpoints are read
 * by the reference reader, not by chunkscan. The functions are pure (no
 * request state), so tests/unit/test_endpoint.c exercises them directly;
 * request.c builds the bodies and turns the facts into the record.
 *
 * Thread affinity: none.
 */
#ifndef HR_WORKER_ENDPOINT_H
#define HR_WORKER_ENDPOINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"

/* A dotted JSON path ("choices.0.text"), compiled. A segment of digits
 * indexes an array (and names a member of an object, as any segment). */
struct ep_path {
	char *text; /* owned: the dotted path as given, for messages; NULL: none */
	char *buf;  /* owned: the segments, NUL-separated */
	int n;      /* segments; 0: no path */
	const char *seg[SPEC_MAX_JSON_PATH_SEGS];
	long idx[SPEC_MAX_JSON_PATH_SEGS]; /* the segment as an array index, or -1 */
};

/* dotted may be NULL (no path). Returns 0, or -1 when it is not a valid
 * path (spec.c validates the same rules first). */
int ep_path_init(struct ep_path *p, const char *dotted);
void ep_path_release(struct ep_path *p);
/* The value at the path (borrowed), or NULL when the path leads nowhere. */
json_t *ep_path_get(const struct ep_path *p, json_t *root);

/* A template body, compiled: literal text with the run's constants
 * ({{model}}, {{stream}}) already filled in, cut where the per-request
 * values go. A request body is, for each piece, its literal bytes and then
 * its slot. */
enum ep_slot {
	EP_SLOT_END = 0,    /* nothing: the last piece */
	EP_SLOT_PROMPT,     /* the prompt, JSON-escaped (inside a string) */
	EP_SLOT_MAX_TOKENS, /* the requested output length in decimal (the quotes of a
	                     * string that was exactly "{{max_tokens}}" are gone) */
};
struct ep_piece {
	size_t off, len; /* literal bytes: text[off .. off + len) */
	int slot;        /* enum ep_slot */
};
struct ep_template {
	char *text; /* owned */
	size_t text_len;
	struct ep_piece *piece; /* owned */
	size_t n;
};

#define EP_TEMPLATE_MAX_BYTES (16u << 20) /* compiled template text */

/* body: the template's body (an object); extra: target.extra_body (merged
 * over it, may be NULL). Returns 0, or -1 with a message in err
 * (HR_ERRLEN bytes). */
int ep_template_compile(struct ep_template *t, json_t *body, json_t *extra, const char *model,
                        bool stream, char *err);
void ep_template_release(struct ep_template *t);

/* What an answer (a whole body) or a stream event said. */
struct ep_facts {
	int err;       /* HR_ERR_NONE, HR_ERR_MALFORMED_STREAM or HR_ERR_NO_CONTENT */
	char msg[200]; /* when err: what was wrong, naming the member */
	bool chunk;    /* a stream event: it is a content chunk */
	bool final;    /* a TGI event with generated_text: the end of the stream */
	json_t *text;  /* borrowed: the content string (for conversations), or NULL */
	int64_t prompt_tokens, completion_tokens; /* from the server, or -1 */
	json_t *error; /* borrowed: a stream event's non-null "error" member, or NULL */
};

/* Reader helpers shared by endpoint.c and epnread.c: f reset (no usage
 * known); f's error err with its message, the first one only (returns
 * -1); a usage count at key of obj, -1 when it is not an integer in
 * 0..INT32_MAX. */
void ep_facts_init(struct ep_facts *f);
int ep_bad(struct ep_facts *f, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t ep_count(json_t *obj, const char *key);

/* A whole 200 answer, parsed (root may be any JSON value). items: the
 * inputs (embeddings) or passages (rankings) sent, 0 when not known;
 * path: the template's response_path. */
void ep_read_answer(int endpoint, json_t *root, int items, const struct ep_path *path,
                    struct ep_facts *f);
/* One stream event of TGI or a template, parsed; path: the template's
 * stream_path. */
void ep_read_event(int endpoint, json_t *root, const struct ep_path *path, struct ep_facts *f);

#endif
