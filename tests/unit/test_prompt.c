/* test_prompt.c - synthetic prompts (lib/prompt.c): the text is exactly
 * the words rng_hash chooses, for short and long prompts, warm-up and
 * trace-block indices, and a full buffer fails cleanly. */
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "prompt.h"
#include "rng.h"
#include "tap.h"

static const char *const WORDS[64] = {
    "time",    "year",    "people",   "way",  "day",     "man",     "thing",  "woman",
    "life",    "child",   "world",    "school", "state", "family",  "student", "group",
    "country", "problem", "hand",     "part", "place",   "case",    "week",   "company",
    "system",  "program", "question", "work", "number",  "night",   "point",  "home",
    "water",   "room",    "mother",   "area", "money",   "story",   "fact",   "month",
    "lot",     "right",   "study",    "book", "eye",     "job",     "word",   "business",
    "issue",   "side",    "kind",     "head", "house",   "service", "friend", "father",
    "power",   "hour",    "game",     "line", "end",     "member",  "law",    "car",
};

/* The definition: word i of request r is WORDS[rng_hash(seed, stream,
 * (r << 24) + i) & 63], stream RNG_STREAM_PROMPT, or for indices from 2^40
 * up rng_hash(seed, RNG_STREAM_PROMPT, r >> 40). */
static void reference(struct dynbuf *b, uint64_t seed, uint64_t req_id, int n)
{
	uint64_t stream = RNG_STREAM_PROMPT;
	if (req_id >> 40)
		stream = rng_hash(seed, RNG_STREAM_PROMPT, req_id >> 40);
	for (int i = 0; i < n; i++) {
		if (i)
			dynbuf_add(b, " ", 1);
		dynbuf_addstr(b, WORDS[rng_hash(seed, stream, (req_id << 24) + (uint64_t)i) & 63]);
	}
}

static void test_matches_reference(void)
{
	static const uint64_t ids[] = {0, 1, 2, 77, 1000000, (1ULL << 40) + 5, (1ULL << 41) + 123,
	                               (1ULL << 40) * 3 + 9};
	static const int lens[] = {0, 1, 2, 7, 56, 57, 58, 100, 128, 1000, 5000};
	int bad = 0;
	for (uint64_t seed = 0; seed < 3; seed++)
		for (size_t a = 0; a < sizeof ids / sizeof ids[0]; a++)
			for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
				struct dynbuf got, want;
				dynbuf_init(&got, 1 << 20);
				dynbuf_init(&want, 1 << 20);
				dynbuf_addstr(&got, "x"); /* appends to what is there */
				dynbuf_addstr(&want, "x");
				int rc = prompt_synthetic(&got, seed * 1000003, ids[a], lens[l]);
				reference(&want, seed * 1000003, ids[a], lens[l]);
				if ((rc != 0 || got.len != want.len ||
				     memcmp(got.data, want.data, got.len) != 0) &&
				    bad++ == 0) {
					CHECK_EQ_INT(rc, 0);
					CHECK_MEM(got.data, got.len, want.data, want.len);
				}
				dynbuf_release(&got);
				dynbuf_release(&want);
			}
	CHECK_EQ_INT(bad, 0);
}

static void test_full_buffer(void)
{
	struct dynbuf b;
	dynbuf_init(&b, 100);
	CHECK_EQ_INT(prompt_synthetic(&b, 1, 1, 10), 0);
	CHECK(b.len <= 100);
	dynbuf_reset(&b);
	CHECK_EQ_INT(prompt_synthetic(&b, 1, 1, 1000), -1);
	CHECK(b.len <= 100);
	dynbuf_release(&b);
}

int main(void)
{
	test_matches_reference();
	test_full_buffer();
	return tap_done();
}
