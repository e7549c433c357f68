/* prompt.h - synthetic prompt text of a chosen length in words.
 *
 * Until tokenizers arrive, one "token" of a synthetic prompt is one
 * whitespace-separated word from a fixed list, chosen by rng_hash(seed,
 * RNG_STREAM_PROMPT, ...) so the same request index always gets the same
 * text. headroom-mock counts prompt tokens the same way, so its usage
 * block agrees with the requested input length.
 */
#ifndef HR_PROMPT_H
#define HR_PROMPT_H

#include <stdint.h>

#include "dynbuf.h"

/* Appends `words` words separated by single spaces to out (JSON-safe:
 * lowercase ASCII letters only). Returns 0 or -1 when out is full. */
int prompt_synthetic(struct dynbuf *out, uint64_t seed, uint64_t req_id, int words);

#endif
