/* tok_unicode.c - UTF-8 decoding, White_Space and NFC/NFD normalization for
 * the tokenizer (tok_unicode.h).
 *
 * Normalization works chunk by chunk: a chunk starts at a character that is
 * an NFC "boundary" (canonical combining class 0 and NFC_Quick_Check=Yes,
 * so nothing before it can reorder or compose across it) and runs to the
 * next one. Chunks made of one boundary character are already normalized
 * (for NFD: unless the character decomposes), so ordinary text is scanned
 * with one table lookup per non-ASCII character and copied only when a
 * chunk actually changes. A chunk that needs work is fully decomposed
 * (canonical decompositions, Hangul algorithmically), put in canonical order
 * (stable sort by combining class) and, for NFC, recomposed with the
 * UAX #15 algorithm.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_unicode.h"
#include "util.h"

#include "tok_nfc_data.h"

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define LCOUNT 19u
#define VCOUNT 21u
#define TCOUNT 28u
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

void tok_bytes_reserve(struct tok_bytes *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < extra) {
		if (cap > SIZE_MAX / 2)
			xalloc_die();
		cap *= 2;
	}
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

void tok_bytes_add(struct tok_bytes *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	tok_bytes_reserve(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void tok_bytes_release(struct tok_bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void tok_cps_release(struct tok_cps *c)
{
	free(c->cp);
	free(c->ccc);
	memset(c, 0, sizeof(*c));
}

static void cps_push(struct tok_cps *c, uint32_t cp, uint8_t ccc)
{
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		c->cp = xrealloc(c->cp, cap * sizeof(*c->cp));
		c->ccc = xrealloc(c->ccc, cap);
		c->cap = cap;
	}
	c->cp[c->len] = cp;
	c->ccc[c->len] = ccc;
	c->len++;
}

size_t tok_utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	uint8_t c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c < 0xC2)
		return 0; /* continuation byte or overlong 2-byte lead */
	if (c < 0xE0) {
		if (n < 2 || (s[1] & 0xC0) != 0x80)
			return 0;
		*cp = ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
		return 2;
	}
	if (c < 0xF0) {
		if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
			return 0;
		if (c == 0xE0 && s[1] < 0xA0)
			return 0; /* overlong */
		if (c == 0xED && s[1] >= 0xA0)
			return 0; /* surrogate */
		*cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
		return 3;
	}
	if (c < 0xF5) {
		if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
		    (s[3] & 0xC0) != 0x80)
			return 0;
		if (c == 0xF0 && s[1] < 0x90)
			return 0; /* overlong */
		if (c == 0xF4 && s[1] >= 0x90)
			return 0; /* past U+10FFFF */
		*cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
		      ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
		return 4;
	}
	return 0;
}

size_t tok_utf8_valid_len(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		/* ASCII in words of 8 */
		while (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ull)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		size_t l = tok_utf8_next(s + i, n - i, &cp);
		if (l == 0)
			break;
		i += l;
	}
	return i;
}

size_t tok_utf8_invalid_len(const uint8_t *s, size_t n)
{
	size_t i = 0;
	uint32_t cp;
	while (i < n && tok_utf8_next(s + i, n - i, &cp) == 0)
		i++;
	return i;
}

size_t tok_utf8_put(uint8_t *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xC0 | (cp >> 6));
		out[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xE0 | (cp >> 12));
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t)(0xF0 | (cp >> 18));
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

int tok_is_white_space(uint32_t cp)
{
	if (cp <= 0x20)
		return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
	if (cp < 0x85)
		return 0;
	return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

const char *tok_unicode_version(void)
{
	return TOK_NFC_UNICODE_VERSION;
}

/* Not an NFC boundary: ccc != 0 or NFC_Quick_Check != Yes. */
static int not_boundary(uint32_t cp)
{
	return (tok_nfc_nb_blocks[tok_nfc_nb_stage1[cp >> 8]][(cp & 255) >> 3] >> (cp & 7)) & 1;
}

static uint8_t ccc_of(uint32_t cp)
{
	if (cp < 0x300)
		return 0;
	size_t lo = 0, hi = HR_ARRAY_LEN(tok_ccc_ranges);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < tok_ccc_ranges[mid].lo)
			hi = mid;
		else if (cp > tok_ccc_ranges[mid].hi)
			lo = mid + 1;
		else
			return tok_ccc_ranges[mid].ccc;
	}
	return 0;
}

static const struct tok_decomp *decomp_of(uint32_t cp)
{
	if (cp < 0xC0)
		return NULL;
	size_t lo = 0, hi = HR_ARRAY_LEN(tok_decomps);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < tok_decomps[mid].cp)
			hi = mid;
		else if (cp > tok_decomps[mid].cp)
			lo = mid + 1;
		else
			return &tok_decomps[mid];
	}
	return NULL;
}

static int decomposes(uint32_t cp)
{
	return (cp >= SBASE && cp < SBASE + SCOUNT) || decomp_of(cp) != NULL;
}

/* Primary composite of a + b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
	if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
		return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
	if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE &&
	    b < TBASE + TCOUNT)
		return a + (b - TBASE);
	size_t lo = 0, hi = HR_ARRAY_LEN(tok_comps);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tok_comp *c = &tok_comps[mid];
		if (a < c->first || (a == c->first && b < c->second))
			hi = mid;
		else if (a > c->first || b > c->second)
			lo = mid + 1;
		else
			return c->composite;
	}
	return 0;
}

static void push_decomposed(struct tok_cps *c, uint32_t cp)
{
	if (cp >= SBASE && cp < SBASE + SCOUNT) {
		uint32_t s = cp - SBASE;
		cps_push(c, LBASE + s / NCOUNT, 0);
		cps_push(c, VBASE + (s % NCOUNT) / TCOUNT, 0);
		if (s % TCOUNT)
			cps_push(c, TBASE + s % TCOUNT, 0);
		return;
	}
	const struct tok_decomp *d = decomp_of(cp);
	if (!d) {
		cps_push(c, cp, ccc_of(cp));
		return;
	}
	for (unsigned i = 0; i < d->len; i++) {
		uint32_t x = tok_decomp_pool[d->off + i];
		cps_push(c, x, ccc_of(x));
	}
}

/* Stable sort of c[lo..hi) by combining class (all nonzero). */
static void sort_run(struct tok_cps *c, size_t lo, size_t hi)
{
	if (hi - lo <= 32) {
		for (size_t i = lo + 1; i < hi; i++) {
			uint32_t cp = c->cp[i];
			uint8_t cc = c->ccc[i];
			size_t j = i;
			while (j > lo && c->ccc[j - 1] > cc) {
				c->cp[j] = c->cp[j - 1];
				c->ccc[j] = c->ccc[j - 1];
				j--;
			}
			c->cp[j] = cp;
			c->ccc[j] = cc;
		}
		return;
	}
	/* counting sort: linear even for hostile runs of marks */
	size_t n = hi - lo, count[257] = {0};
	uint32_t *tmp = xmalloc(n * sizeof(*tmp));
	uint8_t *tcc = xmalloc(n);
	for (size_t i = lo; i < hi; i++)
		count[c->ccc[i] + 1]++;
	for (int k = 1; k < 257; k++)
		count[k] += count[k - 1];
	for (size_t i = lo; i < hi; i++) {
		size_t at = count[c->ccc[i]]++;
		tmp[at] = c->cp[i];
		tcc[at] = c->ccc[i];
	}
	memcpy(c->cp + lo, tmp, n * sizeof(*tmp));
	memcpy(c->ccc + lo, tcc, n);
	free(tmp);
	free(tcc);
}

/* Normalizes the chunk s[0..n) into tmp (appended). */
static void normalize_chunk(enum tok_norm_form form, const uint8_t *s, size_t n,
                            struct tok_bytes *tmp, struct tok_cps *c)
{
	c->len = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = tok_utf8_next(s + i, n - i, &cp);
		if (l == 0) { /* cannot happen: the caller validated */
			l = 1;
			cp = 0xFFFD;
		}
		push_decomposed(c, cp);
		i += l;
	}
	/* canonical ordering */
	for (size_t i = 0; i < c->len;) {
		if (c->ccc[i] == 0) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < c->len && c->ccc[j] != 0)
			j++;
		if (j - i > 1)
			sort_run(c, i, j);
		i = j;
	}
	size_t out_n = c->len;
	if (form == TOK_NORM_NFC && c->len > 1) {
		size_t starter = 0, comp = 1;
		uint32_t starter_cp = c->cp[0];
		int last_class = c->ccc[0] ? 256 : 0;
		for (size_t i = 1; i < c->len; i++) {
			uint32_t ch = c->cp[i];
			int cls = c->ccc[i];
			uint32_t composite = compose(starter_cp, ch);
			if (composite && (last_class < cls || last_class == 0)) {
				c->cp[starter] = composite;
				starter_cp = composite;
				continue;
			}
			if (cls == 0) {
				starter = comp;
				starter_cp = ch;
			}
			last_class = cls;
			c->cp[comp++] = ch;
		}
		out_n = comp;
	}
	tok_bytes_reserve(tmp, out_n * 4);
	for (size_t i = 0; i < out_n; i++)
		tmp->len += tok_utf8_put(tmp->p + tmp->len, c->cp[i]);
}

int tok_normalize(enum tok_norm_form form, const uint8_t *s, size_t n, struct tok_bytes *out,
                  struct tok_cps *cps)
{
	int changed = 0;
	size_t copied = 0; /* s[0..copied) is in out (when changed) */
	size_t chunk = 0;  /* start of the current chunk */
	int needs = 0;     /* the current chunk may change */
	struct tok_bytes tmp = {0};
	size_t i = 0;

	for (;;) {
		int boundary = 1, dec = 0;
		size_t l = 0;
		if (i < n) {
			l = 1;
			if (s[i] >= 0x80) {
				uint32_t cp;
				l = tok_utf8_next(s + i, n - i, &cp);
				if (l == 0)
					l = 1; /* invalid byte: left alone (callers validate) */
				else if (not_boundary(cp))
					boundary = 0;
				else if (form == TOK_NORM_NFD && decomposes(cp))
					dec = 1;
			}
		}
		if (i >= n || boundary) {
			/* close the chunk [chunk, i) */
			if (needs && i > chunk) {
				tmp.len = 0;
				normalize_chunk(form, s + chunk, i - chunk, &tmp, cps);
				if (tmp.len != i - chunk ||
				    memcmp(tmp.p, s + chunk, tmp.len) != 0) {
					if (!changed) {
						out->len = 0;
						changed = 1;
					}
					tok_bytes_add(out, s + copied, chunk - copied);
					tok_bytes_add(out, tmp.p, tmp.len);
					copied = i;
				}
			}
			if (i >= n)
				break;
			chunk = i;
			needs = dec;
		} else {
			needs = 1;
		}
		i += l;
	}
	if (changed)
		tok_bytes_add(out, s + copied, n - copied);
	tok_bytes_release(&tmp);
	return changed;
}
