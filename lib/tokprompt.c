/* tokprompt.c - exact-length prompts from a corpus (tokprompt.h). */
#include "tokprompt.h"

#include <stdlib.h>
#include <string.h>

#include "jsonesc.h"
#include "util.h"

static long long count(const struct tok *tok, const char *s, size_t n)
{
	return tok_count(tok, s, n);
}

int tokprompt_init(struct tokprompt *tp, const struct tok *tok, const char *text, size_t len,
		   char *err)
{
	memset(tp, 0, sizeof *tp);
	if (len == 0 || len > UINT32_MAX - 1)
		return errf(err, "the corpus is empty or too large");
	/* cut before every space that precedes a non-space */
	size_t cap = 1024;
	tp->off = xmalloc(cap * sizeof *tp->off);
	tp->off[tp->n++] = 0;
	for (size_t i = 1; i + 1 < len; i++) {
		if (text[i] != ' ' || text[i + 1] == ' ' || text[i + 1] == '\n' ||
		    text[i + 1] == '\t' || text[i + 1] == '\r')
			continue;
		if (tp->n + 1 >= cap) {
			cap *= 2;
			tp->off = xrealloc(tp->off, cap * sizeof *tp->off);
		}
		tp->off[tp->n++] = (uint32_t)i;
	}
	tp->off[tp->n] = (uint32_t)len; /* n pieces, n + 1 offsets (cap > n) */
	tp->text = text;
	tp->tokens = xcalloc(tp->n, sizeof *tp->tokens);
	long long prev = -1;
	for (size_t i = 0; i < tp->n; i++) {
		const char *p = text + tp->off[i];
		size_t plen = tp->off[i + 1] - tp->off[i];
		long long c = count(tok, p, plen);
		if (c < 0) {
			tokprompt_release(tp);
			return errf(err, "the tokenizer failed on the corpus at byte %u", tp->off[i]);
		}
		/* usable: starts a pre-token (leading space), and adds up with the
		 * piece before it in context */
		int ok = p[0] == ' ' && c > 0 && c <= UINT16_MAX;
		if (i > 0 && prev > 0) {
			const char *q = text + tp->off[i - 1];
			long long both = count(tok, q, (size_t)(p + plen - q));
			if (both != prev + c) {
				ok = 0;
				if (tp->tokens[i - 1]) {
					tp->total -= tp->tokens[i - 1];
					tp->one -= tp->tokens[i - 1] == 1;
					tp->tokens[i - 1] = 0;
				}
			}
		}
		prev = c;
		if (ok) {
			tp->tokens[i] = (uint16_t)c;
			tp->total += (uint64_t)c;
			tp->one += c == 1;
		}
	}
	if (tp->one == 0) {
		tokprompt_release(tp);
		return errf(err, "the corpus has no one-token piece to fill prompts with");
	}
	return 0;
}

void tokprompt_release(struct tokprompt *tp)
{
	free(tp->off);
	free(tp->tokens);
	memset(tp, 0, sizeof *tp);
}

int tokprompt_build(const struct tokprompt *tp, uint64_t pick, int tokens, int json,
		    struct dynbuf *out)
{
	size_t i = (size_t)(pick % tp->n);
	long need = tokens;
	/* every pass over the corpus takes at least its one-token pieces, so
	 * this ends: at most need / one + 1 passes */
	while (need > 0) {
		unsigned t = tp->tokens[i];
		if (t && (long)t <= need) {
			const char *piece = tp->text + tp->off[i];
			size_t len = tp->off[i + 1] - tp->off[i];
			if ((json ? json_escape_append(out, piece, len) : dynbuf_add(out, piece, len)) < 0)
				return -1;
			need -= (long)t;
		}
		if (++i == tp->n)
			i = 0;
	}
	return 0;
}
