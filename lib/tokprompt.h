/* tokprompt.h - prompts of an exact number of tokens, sliced from a corpus.
 *
 * The corpus is cut into pieces at every space that comes before a
 * non-space (" the", " waters.\n\nAnd"), and each piece is counted with the
 * run's tokenizer once, at start-up. Byte-level BPE tokenizers with a
 * GPT-style pre-tokenizer (GPT-2, cl100k, o200k, Llama 3, Qwen) never merge
 * across such a boundary (a space before a letter, digit or symbol starts
 * a new pre-token), so a prompt made of whole pieces has exactly the sum
 * of their counts, which is checked for every piece at start-up: a piece
 * whose count does not add up in context (the tokenizer merged across) is
 * never used.
 *
 * A prompt of N tokens starts at a piece chosen from a seeded value and
 * takes the following pieces in corpus order while they fit, skipping the
 * ones that would pass N (a one-token piece such as " the" comes soon),
 * wrapping at the end of the corpus. The text is natural prose with an
 * occasional skipped word; the same value gives the same prompt.
 */
#ifndef HR_TOKPROMPT_H
#define HR_TOKPROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "tokenizer.h"

struct tokprompt {
	const char *text;   /* the corpus (borrowed) */
	uint32_t *off;      /* byte offset of piece i; off[n] = end */
	uint16_t *tokens;   /* tokens of piece i; 0: never used */
	size_t n;
	uint64_t total;     /* tokens over the usable pieces */
	size_t one;         /* pieces of one token (enough to fill any gap) */
};

/* Cuts and counts the corpus text[0..len) with tok (borrowed; not kept).
 * Returns 0, or -1 with err (the corpus has no usable one-token piece,
 * or the tokenizer failed). */
int tokprompt_init(struct tokprompt *tp, const struct tok *tok, const char *text, size_t len,
		   char *err);
void tokprompt_release(struct tokprompt *tp);

/* Appends a prompt of exactly `tokens` (>= 1) tokens chosen by pick to out,
 * escaped for the inside of a JSON string when json is nonzero (the count
 * is that of the text, unescaped). Returns 0, or -1 when out would pass its
 * maximum. */
int tokprompt_build(const struct tokprompt *tp, uint64_t pick, int tokens, int json,
		    struct dynbuf *out);

#endif
