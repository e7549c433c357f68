/* rng.h - counter-based random numbers for reproducible schedules.
 *
 * Every random choice is a pure function of (seed, stream, index): the
 * stream names the concern (input length, output length, prompt text...)
 * so changing one setting never perturbs another, and the index is the
 * global request number so a request gets the same prompt whichever
 * worker sends it.
 */
#ifndef HR_RNG_H
#define HR_RNG_H

#include <stdint.h>

enum rng_stream {
	RNG_STREAM_ISL = 1,
	RNG_STREAM_OSL = 2,
	RNG_STREAM_PROMPT = 3,
	RNG_STREAM_ARRIVAL = 4,        /* profiling arrivals */
	RNG_STREAM_WARMUP_ARRIVAL = 5, /* warm-up arrivals: never perturb the above */
	RNG_STREAM_CANCEL = 6,         /* which requests are cancelled */
	RNG_STREAM_TURNS = 7,          /* turns per session */
	RNG_STREAM_THINK = 8,          /* think time between turns */
	RNG_STREAM_DATASET = 9,        /* which dataset entry a request takes (random, shuffle) */
	RNG_STREAM_PREFIX = 10,        /* which shared prefix prompt a request takes */
	RNG_STREAM_MIX = 11,           /* which (isl, osl) pair of workload.mix */
	RNG_STREAM_TOOL = 12,          /* which tool-time component a turn waits by */
	RNG_STREAM_DOC = 13,           /* whether a turn appends a document */
	RNG_STREAM_DOC_LEN = 14,       /* the document's length */
	RNG_STREAM_IMAGE = 15,         /* which pool picture a request's image k is */
	RNG_STREAM_AUDIO = 16,         /* which pool clip a request's audio clip k is */
};

/* A 64-bit hash of the triple (splitmix64 finaliser over a mix). */
uint64_t rng_hash(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal (Box-Muller over two uniforms derived from index). */
double rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* A length drawn from N(mean, stddev), rounded, clamped to [lo, hi]. */
int rng_length(uint64_t seed, uint64_t stream, uint64_t index, double mean, double stddev, int lo,
	       int hi);

#endif
