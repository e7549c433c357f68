/* prompt.c - deterministic synthetic prompt text (see prompt.h). */
#include "prompt.h"

#include <string.h>

#include "rng.h"

static const char *const words[64] = {
	"time",	  "year",   "people", "way",    "day",	"man",	   "thing",  "woman",
	"life",	  "child",  "world",  "school", "state",	"family",  "student", "group",
	"country", "problem", "hand",  "part",   "place",	"case",	   "week",   "company",
	"system", "program", "question", "work", "number",	"night",   "point",  "home",
	"water",  "room",   "mother", "area",   "money",	"story",   "fact",   "month",
	"lot",	  "right",  "study",  "book",   "eye",	"job",	   "word",   "business",
	"issue",  "side",   "kind",   "head",   "house",	"service", "friend", "father",
	"power",  "hour",   "game",   "line",   "end",	"member",  "law",    "car",
};

int prompt_synthetic(struct dynbuf *out, uint64_t seed, uint64_t req_id, int n)
{
	/* word index space per request; the bits the shift drops (warm-up and
	 * trace-block indices live at 2^40 and up) choose another stream, so
	 * those prompts never repeat a profiling request's text */
	uint64_t base = req_id << 24, stream = RNG_STREAM_PROMPT;
	if (req_id >> 40)
		stream = rng_hash(seed, RNG_STREAM_PROMPT, req_id >> 40);
	for (int i = 0; i < n; i++) {
		const char *w = words[rng_hash(seed, stream, base + (uint64_t)i) & 63];
		if (i && dynbuf_add(out, " ", 1) < 0)
			return -1;
		if (dynbuf_add(out, w, strlen(w)) < 0)
			return -1;
	}
	return 0;
}
