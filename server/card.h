/* card.h - a run's credibility card (docs/card.md): what a reader needs to
 * trust or reproduce a result, recorded with every run without being asked.
 *
 * card_begin, on the runner thread just before the first request, gathers
 * the client host (CPU model, online cores, memory, kernel, headroom's
 * version and build) and the server's identity where the target exposes
 * it (GET /v1/models of an OpenAI-style target: the model ids; its Server,
 * X-Powered-By and *-Version response headers; the *_info series of the
 * server's /metrics when the run scrapes it), each fetch bounded in time
 * and size and made only where the allow-list lets the telemetry scraper
 * connect, plus the load, warm-up and classes of the spec. card_end adds
 * what the run measured: the input and output lengths as sent (from the
 * summary), the client verdict and the GPUs telemetry found. Both store
 * the card in run_cards (schema/014_cards.sql), scrubbed of credentials.
 *
 * card_view turns a stored card (or none) and the run's labels into the
 * card as shown: one fixed list of items, each with its value and where it
 * came from, or marked unknown with the way to fill it (a label of the
 * item's name fills a gap).
 */
#ifndef HR_CARD_H
#define HR_CARD_H

#include <jansson.h>
#include <stdint.h>

#include "netallow.h"
#include "spec.h"
#include "store.h"

/* Bounds of the server identity fetches (docs/limits.md). */
#define CARD_FETCH_TIMEOUT_MS 2000L      /* each of /v1/models and /metrics */
#define CARD_MAX_MODELS_BYTES (1u << 20) /* the /v1/models body */
#define CARD_MAX_MODELS 64               /* model ids kept */
#define CARD_MAX_HEADERS 16              /* identity headers kept */
#define CARD_MAX_VALUE_LEN 200           /* one id, header or label value kept */
#define CARD_MAX_INFO 32                 /* *_info series kept */

/* Gathers the start of the card and stores it (errors are logged: a run
 * never fails for its card). spec_json: the spec as the workers get it
 * (target.url filled in for a daemon-started mock); allow: the run's
 * allow-list (NULL: all); key: the API key the run sends, or NULL, sent
 * to /v1/models the way the workers send it and scrubbed from the card.
 * Returns the card (new reference) for card_end. */
json_t *card_begin(struct store *s, int64_t run_id, json_t *spec_json, const struct spec *spec,
		   const struct netallow *allow, const char *key);
/* Completes card (taken; NULL: nothing gathered) with the summary's
 * lengths and client verdict (summary borrowed, may be NULL) and the GPUs
 * of the run's telemetry, and stores it. */
void card_end(struct store *s, int64_t run_id, json_t *card, json_t *summary);

/* The stored card of a run (new reference), or NULL when it has none. */
json_t *card_read(struct store *s, int64_t run_id);
/* The card as shown (new reference): stored may be NULL; labels: the run's
 * labels object (borrowed, may be NULL). */
json_t *card_view(json_t *stored, json_t *labels);
/* Sets run["card"] to the card view of run `id` (run: a runs_get object
 * whose labels it reads). */
void card_run_member(struct store *s, int64_t id, json_t *run);

#endif
