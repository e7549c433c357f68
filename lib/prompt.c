/* prompt.c - deterministic synthetic prompt text (see prompt.h). */
#include "prompt.h"

#include <string.h>

#include "rng.h"

#define WORD_MAX 8 /* letters of the longest word */
#define BATCH 512  /* bytes written to the buffer at once */

/* NUL-padded to WORD_MAX bytes, so one fixed-size copy writes any word */
static const char words[64][9] = {
	"time", "year", "people", "way", "day", "man", "thing", "woman",
	"life", "child", "world", "school", "state", "family", "student", "group",
	"country", "problem", "hand", "part", "place", "case", "week", "company",
	"system", "program", "question", "work", "number", "night", "point", "home",
	"water", "room", "mother", "area", "money", "story", "fact", "month",
	"lot", "right", "study", "book", "eye", "job", "word", "business",
	"issue", "side", "kind", "head", "house", "service", "friend", "father",
	"power", "hour", "game", "line", "end", "member", "law", "car",
};

static const unsigned char word_len[64] = {
	4, 4, 6, 3, 3, 3, 5, 5, 4, 5, 5, 6, 5, 6, 7, 5,
	7, 7, 4, 4, 5, 4, 4, 7, 6, 7, 8, 4, 6, 5, 5, 4,
	5, 4, 6, 4, 5, 5, 4, 5, 3, 5, 5, 4, 3, 3, 4, 8,
	5, 4, 4, 4, 5, 7, 6, 6, 5, 4, 4, 4, 3, 6, 3, 3,
};

/* rng.c's splitmix64 finaliser: rng_hash(seed, stream, i) is
 * mix64(h ^ (i + C)) with h = mix64(mix64(seed + A) ^ stream * B), so h is
 * computed once per prompt and each word costs one mix (test_prompt checks
 * the text against rng_hash itself). */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int prompt_synthetic(struct dynbuf *out, uint64_t seed, uint64_t req_id, int n)
{
	/* word index space per request; the bits the shift drops (warm-up and
	 * trace-block indices live at 2^40 and up) choose another stream, so
	 * those prompts never repeat a profiling request's text */
	uint64_t base = req_id << 24, stream = RNG_STREAM_PROMPT;
	if (req_id >> 40)
		stream = rng_hash(seed, RNG_STREAM_PROMPT, req_id >> 40);
	uint64_t h = mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ (stream * 0xd1b54a32d192ed03ULL));
	char buf[BATCH];
	size_t k = 0;
	for (int i = 0; i < n; i++) {
		unsigned w = (unsigned)(mix64(h ^ (base + (uint64_t)i + 0x632be59bd9b4e019ULL)) & 63);
		if (k > BATCH - WORD_MAX - 1) {
			if (dynbuf_add(out, buf, k) < 0)
				return -1;
			k = 0;
		}
		if (i)
			buf[k++] = ' ';
		memcpy(buf + k, words[w], WORD_MAX);
		k += word_len[w];
	}
	return k ? dynbuf_add(out, buf, k) : 0;
}
