/* tok_encode.c - text to token ids: added/special tokens first (leftmost,
 * longest), then for each stretch of valid UTF-8 the normalizers and the
 * pre-tokenizer steps (PCRE2 splits with Hugging Face's behaviours), then
 * byte-pair merging of every piece.
 *
 * The merge loop is the standard one (merge the adjacent pair of lowest
 * rank, leftmost first) over a linked list of symbols with a binary heap of
 * candidate pairs, so a piece of n bytes costs O(n log n) whatever its
 * length. A heap entry is checked when popped: it is stale when its left
 * symbol has died or its right neighbour's end moved. Symbols, heap and
 * normalization output live in per-call scratch memory (struct tok_work)
 * that is reused across calls through an atomic slot in the tokenizer, so
 * encoding allocates nothing per token.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"
#include "util.h"

#define DEAD UINT32_MAX

struct sym {
	uint32_t start, end; /* bytes of the piece */
	uint32_t id;
	uint32_t prev, next; /* indexes, TOK_NONE at the ends */
};

struct hent {
	uint32_t rank, left, rend, id;
};

/* Direct-mapped cache of merge results for short pieces (words recur). */
#define CACHE_SLOTS 8192
#define CACHE_MAX_BYTES 22
#define CACHE_MAX_IDS 8
struct cache_ent {
	uint64_t h;
	uint8_t len, n; /* len 0: empty */
	uint8_t bytes[CACHE_MAX_BYTES];
	uint32_t ids[CACHE_MAX_IDS];
};

struct tok_work {
	pcre2_match_data *md[TOK_MAX_STEPS];
	pcre2_match_data *md_word;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jit;
	struct tok_bytes norm[2];
	struct tok_cps cps;
	struct tok_bytes prefix[TOK_MAX_STEPS];
	struct sym *sym;
	size_t sym_cap;
	struct hent *heap;
	size_t heap_cap, heap_len;
	struct cache_ent *cache; /* CACHE_SLOTS, allocated on first use */
};

struct enc {
	const struct tok *t;
	struct tok_work *w;
	struct tok_ids *ids; /* NULL: count only */
	unsigned long long count;
	unsigned flags;
	char *err;
};

#define SCRATCH_KEEP (1u << 20) /* scratch larger than this is not kept */

void tok_work_free(struct tok_work *w)
{
	if (!w)
		return;
	for (int i = 0; i < TOK_MAX_STEPS; i++) {
		pcre2_match_data_free(w->md[i]);
		tok_bytes_release(&w->prefix[i]);
	}
	pcre2_match_data_free(w->md_word);
	pcre2_match_context_free(w->mctx);
	pcre2_jit_stack_free(w->jit);
	tok_bytes_release(&w->norm[0]);
	tok_bytes_release(&w->norm[1]);
	tok_cps_release(&w->cps);
	free(w->sym);
	free(w->cache);
	free(w->heap);
	free(w);
}

static struct tok_work *work_get(const struct tok *t)
{
	struct tok *mt = (struct tok *)t; /* only the atomic slot is touched */
	struct tok_work *w;
	for (int i = 0; i < TOK_SPARE_WORK; i++)
		if (atomic_load(&mt->spare[i]) && (w = atomic_exchange(&mt->spare[i], NULL)))
			return w;
	w = xcalloc(1, sizeof(*w));
	for (int i = 0; i < TOK_MAX_STEPS; i++)
		if (!(w->md[i] = pcre2_match_data_create(1, NULL)))
			xalloc_die();
	if (!(w->md_word = pcre2_match_data_create(1, NULL)))
		xalloc_die();
	if (!(w->mctx = pcre2_match_context_create(NULL)))
		xalloc_die();
	return w;
}

static void trim(struct tok_bytes *b)
{
	if (b->cap > SCRATCH_KEEP)
		tok_bytes_release(b);
}

static void work_put(const struct tok *t, struct tok_work *w)
{
	struct tok *mt = (struct tok *)t;
	trim(&w->norm[0]);
	trim(&w->norm[1]);
	for (int i = 0; i < TOK_MAX_STEPS; i++)
		trim(&w->prefix[i]);
	if (w->cps.cap * 5 > SCRATCH_KEEP)
		tok_cps_release(&w->cps);
	if (w->sym_cap * sizeof(*w->sym) > SCRATCH_KEEP) {
		free(w->sym);
		w->sym = NULL;
		w->sym_cap = 0;
	}
	if (w->heap_cap * sizeof(*w->heap) > SCRATCH_KEEP) {
		free(w->heap);
		w->heap = NULL;
		w->heap_cap = 0;
	}
	for (int i = 0; i < TOK_SPARE_WORK; i++) {
		struct tok_work *expected = NULL;
		if (atomic_compare_exchange_strong(&mt->spare[i], &expected, w))
			return;
	}
	tok_work_free(w);
}

static void emit(struct enc *e, uint32_t id)
{
	e->count++;
	struct tok_ids *v = e->ids;
	if (!v)
		return;
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		v->v = xrealloc(v->v, cap * sizeof(*v->v));
		v->cap = cap;
	}
	v->v[v->len++] = id;
}

/* ---- byte-pair merging ---- */

static int hent_less(const struct hent *a, const struct hent *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(struct tok_work *w, struct hent h)
{
	if (w->heap_len == w->heap_cap) {
		w->heap_cap = w->heap_cap ? w->heap_cap * 2 : 256;
		w->heap = xrealloc(w->heap, w->heap_cap * sizeof(*w->heap));
	}
	size_t i = w->heap_len++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!hent_less(&h, &w->heap[parent]))
			break;
		w->heap[i] = w->heap[parent];
		i = parent;
	}
	w->heap[i] = h;
}

static struct hent heap_pop(struct tok_work *w)
{
	struct hent top = w->heap[0];
	struct hent last = w->heap[--w->heap_len];
	size_t n = w->heap_len, i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hent_less(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!hent_less(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n)
		w->heap[i] = last;
	return top;
}

/* Pushes the pair (k, next of k) when it can merge. */
static void push_pair(const struct tok *t, struct tok_work *w, const uint8_t *p, uint32_t k)
{
	const struct sym *a = &w->sym[k];
	if (a->next == TOK_NONE)
		return;
	const struct sym *b = &w->sym[a->next];
	struct hent h = {TOK_NONE, k, b->end, TOK_NONE};
	if (t->kind == TOK_TIKTOKEN) {
		uint32_t id = tok_vocab_find(t, p + a->start, b->end - a->start);
		if (id == TOK_NONE)
			return;
		h.rank = h.id = id;
	} else {
		uint64_t key = (uint64_t)a->id << 32 | b->id;
		const struct tok_pair_slot *s = NULL;
		if (t->pairs) {
			uint64_t x = key;
			x ^= x >> 33;
			x *= 0xFF51AFD7ED558CCDull;
			x ^= x >> 33;
			x *= 0xC4CEB9FE1A85EC53ull;
			x ^= x >> 33;
			for (uint32_t j = (uint32_t)x & t->pair_mask;; j = (j + 1) & t->pair_mask) {
				if (t->pairs[j].key == key) {
					s = &t->pairs[j];
					break;
				}
				if (t->pairs[j].key == UINT64_MAX)
					break;
			}
		}
		if (!s)
			return;
		h.rank = s->rank;
		h.id = s->id;
	}
	heap_push(w, h);
}

static int fail(struct enc *e, const char *msg)
{
	errf(e->err, "%s", msg);
	return -1;
}

static int bpe(struct enc *e, const uint8_t *p, size_t n)
{
	const struct tok *t = e->t;
	struct tok_work *w = e->w;
	if (n == 0)
		return 0;
	if (n > TOK_MAX_PIECE_BYTES) {
		errf(e->err, "a piece of %zu bytes with no break (limit %u)", n,
		     TOK_MAX_PIECE_BYTES);
		return -1;
	}
	if (t->whole_piece) {
		uint32_t id = tok_vocab_find(t, p, n);
		if (id != TOK_NONE) {
			emit(e, id);
			return 0;
		}
	}
	if (n == 1 && t->byte_id[p[0]] != TOK_NONE) {
		emit(e, t->byte_id[p[0]]);
		return 0;
	}
	struct cache_ent *ce = NULL;
	uint64_t h = 0;
	if (n <= CACHE_MAX_BYTES) {
		if (!w->cache)
			w->cache = xcalloc(CACHE_SLOTS, sizeof(*w->cache));
		h = tok_hash_bytes(p, n);
		ce = &w->cache[h & (CACHE_SLOTS - 1)];
		if (ce->len == n && ce->h == h && memcmp(ce->bytes, p, n) == 0) {
			for (unsigned i = 0; i < ce->n; i++)
				emit(e, ce->ids[i]);
			return 0;
		}
	}
	if (w->sym_cap < n) {
		free(w->sym);
		w->sym_cap = n < 64 ? 64 : n;
		w->sym = xmalloc(w->sym_cap * sizeof(*w->sym));
	}
	struct sym *s = w->sym;
	uint32_t ns = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = t->byte_id[p[i]];
		if (id == TOK_NONE) {
			if (t->unk_id == TOK_NONE)
				continue; /* Hugging Face drops what it cannot map */
			id = t->unk_id;
			if (t->fuse_unk && ns && s[ns - 1].id == t->unk_id && s[ns - 1].end == i &&
			    t->byte_id[p[i - 1]] == TOK_NONE) {
				s[ns - 1].end = i + 1;
				continue;
			}
		}
		s[ns].start = i;
		s[ns].end = i + 1;
		s[ns].id = id;
		s[ns].prev = ns ? ns - 1 : TOK_NONE;
		s[ns].next = ns + 1;
		ns++;
	}
	if (ns == 0)
		return 0;
	s[ns - 1].next = TOK_NONE;
	w->heap_len = 0;
	for (uint32_t k = 0; k + 1 < ns; k++)
		push_pair(t, w, p, k);
	while (w->heap_len) {
		struct hent top = heap_pop(w);
		struct sym *l = &s[top.left];
		if (l->start == DEAD || l->next == TOK_NONE || s[l->next].end != top.rend)
			continue;
		struct sym *r = &s[l->next];
		l->end = r->end;
		l->id = top.id;
		r->start = DEAD;
		l->next = r->next;
		if (r->next != TOK_NONE)
			s[r->next].prev = top.left;
		if (l->prev != TOK_NONE)
			push_pair(t, w, p, l->prev);
		push_pair(t, w, p, top.left);
	}
	unsigned cn = 0;
	for (uint32_t k = 0; k != TOK_NONE; k = s[k].next) {
		emit(e, s[k].id);
		if (ce && cn < CACHE_MAX_IDS)
			ce->ids[cn] = s[k].id;
		cn++;
	}
	if (ce) {
		if (cn <= CACHE_MAX_IDS) {
			ce->h = h;
			ce->len = (uint8_t)n;
			ce->n = (uint8_t)cn;
			memcpy(ce->bytes, p, n);
		} else {
			ce->len = 0;
		}
	}
	return 0;
}

/* ---- pre-tokenization ---- */

static int pretok(struct enc *e, const uint8_t *p, size_t n, int step);

struct split {
	struct enc *e;
	const uint8_t *p;
	int next_step;
	enum tok_behavior b;
	int have, pflag, prev_flag;
	size_t ps, pe;
};

static int split_out(struct split *sp, size_t s, size_t e)
{
	if (e <= s)
		return 0;
	return pretok(sp->e, sp->p + s, e - s, sp->next_step);
}

static int split_flush(struct split *sp)
{
	if (!sp->have)
		return 0;
	sp->have = 0;
	if (sp->b == TOK_B_REMOVED && sp->pflag)
		return 0;
	return split_out(sp, sp->ps, sp->pe);
}

/* One part of the piece: a match (flag 1, after invert) or the text
 * between matches (flag 0). Follows Hugging Face's SplitDelimiterBehavior. */
static int split_feed(struct split *sp, size_t s, size_t e, int flag)
{
	int rc = 0;
	switch (sp->b) {
	case TOK_B_ISOLATED:
		return split_out(sp, s, e);
	case TOK_B_REMOVED:
		return flag ? 0 : split_out(sp, s, e);
	case TOK_B_CONTIGUOUS:
		if (sp->have && flag == sp->prev_flag) {
			sp->pe = e;
		} else {
			rc = split_flush(sp);
			sp->ps = s, sp->pe = e, sp->pflag = 0, sp->have = 1;
		}
		sp->prev_flag = flag;
		return rc;
	case TOK_B_MERGED_PREV:
		if (flag && !sp->prev_flag && sp->have) {
			sp->pe = e;
		} else {
			rc = split_flush(sp);
			sp->ps = s, sp->pe = e, sp->pflag = 0, sp->have = 1;
		}
		sp->prev_flag = flag;
		return rc;
	case TOK_B_MERGED_NEXT:
		if (sp->have && sp->pflag && !flag) {
			sp->pe = e;
			sp->pflag = 0;
		} else {
			rc = split_flush(sp);
			sp->ps = s, sp->pe = e, sp->pflag = flag, sp->have = 1;
		}
		return rc;
	}
	return 0;
}

static int regex_error(struct enc *e, int rc)
{
	PCRE2_UCHAR msg[160];
	pcre2_get_error_message(rc, msg, sizeof(msg));
	errf(e->err, "pre-tokenizer pattern failed: %s", (char *)msg);
	return -1;
}

static int pretok(struct enc *e, const uint8_t *p, size_t n, int step)
{
	const struct tok *t = e->t;
	if (n == 0)
		return 0;
	if (step == t->n_steps)
		return bpe(e, p, n);
	const struct tok_step *st = &t->steps[step];
	if (st->prefix_space && p[0] != ' ') {
		struct tok_bytes *b = &e->w->prefix[step];
		b->len = 0;
		tok_bytes_add(b, " ", 1);
		tok_bytes_add(b, p, n);
		p = b->p;
		n = b->len;
	}
	if (!st->re)
		return pretok(e, p, n, step + 1);

	pcre2_match_data *md = e->w->md[step];
	struct split sp = {e, p, step + 1, st->behavior, 0, 0, 0, 0, 0};
	size_t pos = 0, prev_end = 0;
	while (pos <= n) {
		/* linear patterns need steps in proportion to the text; the bound only
		 * stops runaway (catastrophic) patterns from hostile files */
		uint64_t limit = 10000000u + 32u * (uint64_t)(n - pos);
		pcre2_set_match_limit(e->w->mctx,
		                      limit > UINT32_MAX ? UINT32_MAX : (uint32_t)limit);
		int rc = pcre2_match(st->re, p, n, pos, PCRE2_NO_UTF_CHECK, md, e->w->mctx);
		if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !e->w->jit) {
			/* past the 32 KiB on the machine stack: give JIT a big one */
			e->w->jit = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, NULL);
			if (!e->w->jit)
				xalloc_die();
			pcre2_jit_stack_assign(e->w->mctx, NULL, e->w->jit);
			continue;
		}
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return regex_error(e, rc);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t ms = ov[0], me = ov[1];
		if (ms < prev_end || me < ms) /* \K or lookbehind tricks: not supported */
			return fail(e, "pre-tokenizer pattern returned an unusable match");
		if (ms > prev_end && split_feed(&sp, prev_end, ms, st->invert) < 0)
			return -1;
		if (split_feed(&sp, ms, me, !st->invert) < 0)
			return -1;
		prev_end = me;
		if (me > ms) {
			pos = me;
		} else { /* empty match: step over one character */
			if (me >= n)
				break;
			uint32_t cp;
			size_t l = tok_utf8_next(p + me, n - me, &cp);
			pos = me + (l ? l : 1);
		}
	}
	if (prev_end < n && split_feed(&sp, prev_end, n, st->invert) < 0)
		return -1;
	return split_flush(&sp);
}

/* ---- added tokens ---- */

/* Length of the character ending at s[end) (1 when not valid UTF-8). */
static size_t prev_char(const uint8_t *s, size_t end, uint32_t *cp)
{
	for (size_t k = 1; k <= 4 && k <= end; k++)
		if (tok_utf8_next(s + end - k, k, cp) == k)
			return k;
	*cp = 0xFFFFFFFFu;
	return 1;
}

static int is_word_at(struct enc *e, const uint8_t *s, size_t at, size_t len)
{
	if (!e->t->word_re || len == 0)
		return 0;
	int rc = pcre2_match(e->t->word_re, s + at, len, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK,
	                     e->w->md_word, NULL);
	return rc >= 0;
}

static int single_word_ok(struct enc *e, const uint8_t *s, size_t n, size_t ms, size_t me)
{
	uint32_t cp;
	if (ms > 0) {
		size_t l = prev_char(s, ms, &cp);
		if (cp != 0xFFFFFFFFu && is_word_at(e, s, ms - l, l))
			return 0;
	}
	if (me < n) {
		size_t l = tok_utf8_next(s + me, n - me, &cp);
		if (l && is_word_at(e, s, me, l))
			return 0;
	}
	return 1;
}

/* The next added token in s[pos..n) that applies, leftmost then longest,
 * with lstrip/rstrip applied: [*ms, *me) and its index. 0 when none. */
static int next_added(struct enc *e, const struct tok_trie *tr, const uint8_t *s, size_t n,
                      size_t pos, size_t start_offset, size_t *ms, size_t *me, uint32_t *ai)
{
	const struct tok *t = e->t;
	for (size_t i = pos; i < n; i++) {
		if (!tr->first[s[i]])
			continue;
		uint32_t node = 0, best = TOK_NONE;
		size_t best_end = 0;
		for (size_t j = i; j < n; j++) {
			uint32_t c = tr->n[node].child;
			while (c && tr->n[c].byte != s[j])
				c = tr->n[c].sibling;
			if (!c)
				break;
			node = c;
			if (tr->n[node].added != TOK_NONE) {
				best = tr->n[node].added;
				best_end = j + 1;
			}
		}
		if (best == TOK_NONE)
			continue;
		const struct tok_added *a = &t->added[best];
		if ((a->special && !(e->flags & TOK_ENC_SPECIAL)) ||
		    (a->single_word && !single_word_ok(e, s, n, i, best_end))) {
			i = best_end - 1; /* skipped, but consumed (as Hugging Face does) */
			continue;
		}
		size_t a_s = i, a_e = best_end;
		if (a->lstrip) {
			size_t k = a_s;
			while (k > 0) {
				uint32_t cp;
				size_t l = prev_char(s, k, &cp);
				if (cp == 0xFFFFFFFFu || !tok_is_white_space(cp))
					break;
				k -= l;
			}
			a_s = k > start_offset ? k : start_offset;
		}
		if (a->rstrip) {
			while (a_e < n) {
				uint32_t cp;
				size_t l = tok_utf8_next(s + a_e, n - a_e, &cp);
				if (!l || !tok_is_white_space(cp))
					break;
				a_e += l;
			}
		}
		*ms = a_s;
		*me = a_e;
		*ai = best;
		return 1;
	}
	return 0;
}

typedef int (*rest_fn)(struct enc *e, const uint8_t *p, size_t n);

static int split_added(struct enc *e, const struct tok_trie *tr, const uint8_t *s, size_t n,
                       rest_fn rest)
{
	if (tr->len == 0)
		return rest(e, s, n);
	size_t start_offset = 0;
	size_t ms, me;
	uint32_t ai;
	while (next_added(e, tr, s, n, start_offset, start_offset, &ms, &me, &ai)) {
		if (ms > start_offset && rest(e, s + start_offset, ms - start_offset) < 0)
			return -1;
		emit(e, e->t->added[ai].id);
		start_offset = me;
	}
	return start_offset < n ? rest(e, s + start_offset, n - start_offset) : 0;
}

static int pretok0(struct enc *e, const uint8_t *p, size_t n)
{
	return pretok(e, p, n, 0);
}

/* Valid UTF-8 between raw added tokens: normalize, then normalized added
 * tokens, then pre-tokenize. */
static int encode_valid(struct enc *e, const uint8_t *p, size_t n)
{
	const struct tok *t = e->t;
	int k = 0;
	for (int i = 0; i < t->n_norms; i++) {
		if (tok_normalize(t->norms[i], p, n, &e->w->norm[k], &e->w->cps)) {
			p = e->w->norm[k].p;
			n = e->w->norm[k].len;
			k ^= 1;
		}
	}
	return split_added(e, &t->trie_norm, p, n, pretok0);
}

/* Text between raw added tokens: valid UTF-8 runs go through the pipeline;
 * each run of invalid bytes is one piece for the BPE model as it is. */
static int encode_plain(struct enc *e, const uint8_t *p, size_t n)
{
	while (n) {
		size_t v = tok_utf8_valid_len(p, n);
		if (v) {
			if (encode_valid(e, p, v) < 0)
				return -1;
			p += v;
			n -= v;
		}
		if (n) {
			size_t bad = tok_utf8_invalid_len(p, n);
			if (bpe(e, p, bad) < 0)
				return -1;
			p += bad;
			n -= bad;
		}
	}
	return 0;
}

static int encode(const struct tok *t, const char *text, size_t len, unsigned flags,
                  struct tok_ids *ids, unsigned long long *count, char *err)
{
	struct enc e = {t, work_get(t), ids, 0, flags, err};
	int rc = split_added(&e, &t->trie_raw, (const uint8_t *)text, len, encode_plain);
	work_put(t, e.w);
	if (count)
		*count = e.count;
	return rc;
}

int tok_encode_ex(const struct tok *t, const char *text, size_t len, unsigned flags,
                  struct tok_ids *ids, char *err)
{
	return encode(t, text, len, flags, ids, NULL, err);
}

int tok_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *ids)
{
	return encode(t, text, len, 0, ids, NULL, NULL);
}

long long tok_count(const struct tok *t, const char *text, size_t len)
{
	unsigned long long n = 0;
	if (encode(t, text, len, 0, NULL, &n, NULL) < 0)
		return -1;
	return (long long)n;
}
