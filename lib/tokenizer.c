/* tokenizer.c - the loaded tokenizer's tables (id <-> bytes, BPE pairs,
 * added-token tries, pre-tokenizer steps), format detection, decoding and
 * freeing. The formats are parsed by tok_hf.c and tok_tiktoken.c; encoding
 * lives in tok_encode.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dynbuf.h"
#include "tok_int.h"
#include "util.h"

void tok_ids_init(struct tok_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
}

void tok_ids_release(struct tok_ids *ids)
{
	free(ids->v);
	memset(ids, 0, sizeof(*ids));
}

/* 64-bit hash of a short byte string. */
uint64_t tok_hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xFF51AFD7ED558CCDull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
		h ^= h >> 31;
		p += 8;
		n -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * 0x94D049BB133111EBull;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return h;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xFF51AFD7ED558CCDull;
	x ^= x >> 33;
	x *= 0xC4CEB9FE1A85EC53ull;
	x ^= x >> 33;
	return x;
}

struct tok *tok_new(enum tok_kind_e kind)
{
	struct tok *t = xcalloc(1, sizeof(*t));
	t->kind = kind;
	t->unk_id = TOK_NONE;
	for (int i = 0; i < 256; i++)
		t->byte_id[i] = TOK_NONE;
	for (int i = 0; i < TOK_SPARE_WORK; i++)
		atomic_init(&t->spare[i], NULL);
	return t;
}

int tok_set_ids(struct tok *t, uint32_t n_ids, char *err)
{
	if (n_ids > TOK_MAX_IDS)
		return errf(err, "token id %u is past the limit of %u", n_ids - 1, TOK_MAX_IDS - 1);
	if (n_ids <= t->n_ids)
		return 0;
	if (n_ids > t->ids_cap) { /* geometric: rank files grow one id at a time */
		uint32_t cap = t->ids_cap ? t->ids_cap : 1024;
		while (cap < n_ids)
			cap = cap > TOK_MAX_IDS / 2 ? TOK_MAX_IDS : cap * 2;
		t->id_off = xrealloc(t->id_off, (size_t)cap * sizeof(*t->id_off));
		t->id_len = xrealloc(t->id_len, (size_t)cap * sizeof(*t->id_len));
		t->ids_cap = cap;
	}
	for (uint32_t i = t->n_ids; i < n_ids; i++) {
		t->id_off[i] = TOK_NONE;
		t->id_len[i] = 0;
	}
	t->n_ids = n_ids;
	return 0;
}

static void vocab_grow(struct tok *t, uint32_t want)
{
	uint32_t cap = 64;
	while (cap < want * 2u)
		cap *= 2;
	struct tok_vslot *s = xmalloc((size_t)cap * sizeof(*s));
	for (uint32_t i = 0; i < cap; i++)
		s[i].id = TOK_NONE;
	uint32_t mask = cap - 1;
	if (t->slots) {
		for (uint32_t i = 0; i <= t->slot_mask; i++) {
			if (t->slots[i].id == TOK_NONE)
				continue;
			uint64_t h = tok_hash_bytes(t->strs + t->slots[i].off, t->slots[i].len);
			uint32_t j = (uint32_t)h & mask;
			while (s[j].id != TOK_NONE)
				j = (j + 1) & mask;
			s[j] = t->slots[i];
		}
		free(t->slots);
	}
	t->slots = s;
	t->slot_mask = mask;
}

void tok_vocab_reserve(struct tok *t, uint32_t n)
{
	if (!t->slots || (uint64_t)n * 2 > (uint64_t)t->slot_mask + 1)
		vocab_grow(t, n);
}

uint32_t tok_vocab_find(const struct tok *t, const uint8_t *p, size_t n)
{
	if (!t->slots)
		return TOK_NONE;
	uint64_t h = tok_hash_bytes(p, n);
	uint32_t h32 = (uint32_t)(h >> 32);
	for (uint32_t j = (uint32_t)h & t->slot_mask;; j = (j + 1) & t->slot_mask) {
		const struct tok_vslot *s = &t->slots[j];
		if (s->id == TOK_NONE)
			return TOK_NONE;
		if (s->hash == h32 && s->len == n && memcmp(t->strs + s->off, p, n) == 0)
			return s->id;
	}
}

int tok_set_token(struct tok *t, uint32_t id, const uint8_t *p, size_t n, int index, char *err)
{
	if (id >= t->n_ids)
		return errf(err, "token id %u out of range", id);
	if (n > TOK_MAX_TOKEN_BYTES)
		return errf(err, "token %u is %zu bytes long (limit %u)", id, n,
		            TOK_MAX_TOKEN_BYTES);
	if (t->id_off[id] != TOK_NONE)
		return errf(err, "token id %u is given twice", id);
	if (index && n == 0)
		return errf(err, "token %u is empty", id);
	if (t->strs_len + n > UINT32_MAX - 1)
		return errf(err, "tokens too large in total");
	if (index && tok_vocab_find(t, p, n) != TOK_NONE)
		return errf(err, "token %u duplicates token %u", id, tok_vocab_find(t, p, n));
	if (t->strs_cap - t->strs_len < n) {
		size_t cap = t->strs_cap ? t->strs_cap : 4096;
		while (cap - t->strs_len < n)
			cap *= 2;
		t->strs = xrealloc(t->strs, cap);
		t->strs_cap = cap;
	}
	if (n)
		memcpy(t->strs + t->strs_len, p, n);
	t->id_off[id] = (uint32_t)t->strs_len;
	t->id_len[id] = (uint32_t)n;
	t->strs_len += n;
	if (!index)
		return 0;
	t->n_vocab++;
	tok_vocab_reserve(t, t->n_vocab);
	uint64_t h = tok_hash_bytes(p, n);
	uint32_t j = (uint32_t)h & t->slot_mask;
	while (t->slots[j].id != TOK_NONE)
		j = (j + 1) & t->slot_mask;
	t->slots[j].id = id;
	t->slots[j].hash = (uint32_t)(h >> 32);
	t->slots[j].off = t->id_off[id];
	t->slots[j].len = (uint32_t)n;
	return 0;
}

static void pairs_grow(struct tok *t, uint32_t want)
{
	uint32_t cap = 64;
	while (cap < want * 2u)
		cap *= 2;
	struct tok_pair_slot *s = xmalloc((size_t)cap * sizeof(*s));
	for (uint32_t i = 0; i < cap; i++)
		s[i].key = UINT64_MAX;
	uint32_t mask = cap - 1;
	if (t->pairs) {
		for (uint32_t i = 0; i <= t->pair_mask; i++) {
			if (t->pairs[i].key == UINT64_MAX)
				continue;
			uint32_t j = (uint32_t)hash_u64(t->pairs[i].key) & mask;
			while (s[j].key != UINT64_MAX)
				j = (j + 1) & mask;
			s[j] = t->pairs[i];
		}
		free(t->pairs);
	}
	t->pairs = s;
	t->pair_mask = mask;
}

void tok_pairs_reserve(struct tok *t, uint32_t n)
{
	if (!t->pairs || (uint64_t)n * 2 > (uint64_t)t->pair_mask + 1)
		pairs_grow(t, n);
}

void tok_pair_set(struct tok *t, uint32_t a, uint32_t b, uint32_t rank, uint32_t id)
{
	tok_pairs_reserve(t, t->n_pairs + 1);
	uint64_t key = (uint64_t)a << 32 | b;
	uint32_t j = (uint32_t)hash_u64(key) & t->pair_mask;
	while (t->pairs[j].key != UINT64_MAX && t->pairs[j].key != key)
		j = (j + 1) & t->pair_mask;
	if (t->pairs[j].key == UINT64_MAX)
		t->n_pairs++;
	t->pairs[j].key = key;
	t->pairs[j].rank = rank;
	t->pairs[j].id = id;
}

int tok_add_added(struct tok *t, uint32_t id, const uint8_t *p, size_t n, int special, int lstrip,
                  int rstrip, int single_word, int normalized, char *err)
{
	if (t->n_added >= TOK_MAX_ADDED)
		return errf(err, "more than %u added tokens", TOK_MAX_ADDED);
	if (n == 0)
		return errf(err, "added token %u is empty", id);
	if (n > TOK_MAX_TOKEN_BYTES)
		return errf(err, "added token %u is %zu bytes long (limit %u)", id, n,
		            TOK_MAX_TOKEN_BYTES);
	if (tok_utf8_valid_len(p, n) != n)
		return errf(err, "added token %u is not valid UTF-8", id);
	if (id >= t->n_ids && tok_set_ids(t, id + 1, err) < 0)
		return -1;
	if (t->id_off[id] == TOK_NONE && tok_set_token(t, id, p, n, 0, err) < 0)
		return -1;
	if ((t->n_added & (t->n_added - 1)) == 0)
		t->added = xrealloc(t->added,
		                    (size_t)(t->n_added ? t->n_added * 2 : 1) * sizeof(*t->added));
	/* the content, kept for matching (the id's bytes may differ) */
	uint32_t off = (uint32_t)t->strs_len;
	if (t->strs_cap - t->strs_len < n) {
		size_t cap = t->strs_cap ? t->strs_cap : 4096;
		while (cap - t->strs_len < n)
			cap *= 2;
		t->strs = xrealloc(t->strs, cap);
		t->strs_cap = cap;
	}
	memcpy(t->strs + t->strs_len, p, n);
	t->strs_len += n;
	struct tok_added *a = &t->added[t->n_added++];
	a->id = id;
	a->off = off;
	a->len = (uint32_t)n;
	a->special = (uint8_t) !!special;
	a->lstrip = (uint8_t) !!lstrip;
	a->rstrip = (uint8_t) !!rstrip;
	a->single_word = (uint8_t) !!single_word;
	a->normalized = (uint8_t) !!normalized;
	if (single_word)
		t->any_single_word = 1;
	return 0;
}

/* Rewrites \s (and \S outside classes) so that it also matches U+0085, as
 * \s does in Rust's regex and Oniguruma (the White_Space property); PCRE2's
 * UCP \s lacks NEL. Everything else is copied. */
static char *widen_space(const char *pat, size_t len, size_t *out_len)
{
	struct tok_bytes o = {0};
	int in_class = 0;
	size_t class_start = 0;
	for (size_t i = 0; i < len; i++) {
		char c = pat[i];
		if (c == '\\' && i + 1 < len) {
			char d = pat[i + 1];
			if (d == 'Q') { /* \Q...\E: literal */
				size_t e = i + 2;
				while (e + 1 < len && !(pat[e] == '\\' && pat[e + 1] == 'E'))
					e++;
				e = e + 1 < len ? e + 2 : len;
				tok_bytes_add(&o, pat + i, e - i);
				i = e - 1;
				continue;
			}
			if (d == 's')
				tok_bytes_add(&o, in_class ? "\\s\\x{85}" : "[\\s\\x{85}]",
				              in_class ? 8 : 10);
			else if (d == 'S' && !in_class)
				tok_bytes_add(&o, "[^\\s\\x{85}]", 11);
			else
				tok_bytes_add(&o, pat + i, 2);
			i++;
			continue;
		}
		if (!in_class && c == '[') {
			in_class = 1;
			tok_bytes_add(&o, &c, 1);
			class_start = i + 1;
			if (class_start < len && pat[class_start] == '^') {
				tok_bytes_add(&o, "^", 1);
				i++;
				class_start++;
			}
			if (class_start < len && pat[class_start] == ']') { /* literal ] */
				tok_bytes_add(&o, "]", 1);
				i++;
			}
			continue;
		}
		if (in_class && c == '[' && i + 1 < len && pat[i + 1] == ':') { /* [:name:] */
			size_t e = i + 2;
			while (e + 1 < len && !(pat[e] == ':' && pat[e + 1] == ']'))
				e++;
			e = e + 1 < len ? e + 2 : len;
			tok_bytes_add(&o, pat + i, e - i);
			i = e - 1;
			continue;
		}
		if (in_class && c == ']')
			in_class = 0;
		tok_bytes_add(&o, &c, 1);
	}
	tok_bytes_add(&o, "", 1);
	*out_len = o.len - 1;
	return (char *)o.p;
}

int tok_compile(const char *pat, size_t len, int literal, pcre2_code **out, char *err)
{
	if (len > TOK_MAX_PATTERN_BYTES)
		return errf(err, "pattern of %zu bytes (limit %u)", len, TOK_MAX_PATTERN_BYTES);
	size_t wlen = len;
	char *w = literal ? NULL : widen_space(pat, len, &wlen);
	int ec;
	PCRE2_SIZE eo;
	pcre2_code *re =
	    pcre2_compile((PCRE2_SPTR)(w ? w : pat), wlen,
	                  PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP), &ec, &eo, NULL);
	free(w);
	if (!re) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(ec, msg, sizeof(msg));
		return errf(err, "bad pattern at offset %zu: %s", (size_t)eo, (char *)msg);
	}
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter works without */
	*out = re;
	return 0;
}

int tok_add_step(struct tok *t, pcre2_code *re, enum tok_behavior b, int invert, int prefix_space,
                 char *err)
{
	if (t->n_steps >= TOK_MAX_STEPS) {
		pcre2_code_free(re);
		return errf(err, "more than %d pre-tokenizer steps", TOK_MAX_STEPS);
	}
	struct tok_step *s = &t->steps[t->n_steps++];
	s->re = re;
	s->behavior = b;
	s->invert = invert;
	s->prefix_space = prefix_space;
	return 0;
}

static uint32_t trie_node(struct tok_trie *tr, uint8_t byte)
{
	if (tr->len == tr->cap) {
		tr->cap = tr->cap ? tr->cap * 2 : 64;
		tr->n = xrealloc(tr->n, (size_t)tr->cap * sizeof(*tr->n));
	}
	struct tok_trie_node *n = &tr->n[tr->len];
	n->child = n->sibling = 0;
	n->added = TOK_NONE;
	n->byte = byte;
	return tr->len++;
}

static void trie_insert(struct tok_trie *tr, const uint8_t *p, size_t n, uint32_t added)
{
	if (tr->len == 0)
		trie_node(tr, 0);
	uint32_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = tr->n[at].child, prev = 0;
		while (c && tr->n[c].byte != p[i]) {
			prev = c;
			c = tr->n[c].sibling;
		}
		if (!c) {
			c = trie_node(tr, p[i]);
			if (prev)
				tr->n[prev].sibling = c;
			else
				tr->n[at].child = c;
		}
		at = c;
	}
	if (tr->n[at].added == TOK_NONE) /* the first of equal contents wins */
		tr->n[at].added = added;
	tr->first[p[0]] = 1;
}

int tok_finish(struct tok *t, char *err)
{
	for (int b = 0; b < 256; b++) {
		uint8_t c = (uint8_t)b;
		t->byte_id[b] = tok_vocab_find(t, &c, 1);
	}
	if (t->kind == TOK_TIKTOKEN) {
		for (int b = 0; b < 256; b++)
			if (t->byte_id[b] == TOK_NONE)
				return errf(err, "no rank for the single byte 0x%02x", b);
	}
	struct tok_cps cps = {0};
	struct tok_bytes nb[2] = {{0}};
	for (uint32_t i = 0; i < t->n_added; i++) {
		struct tok_added *a = &t->added[i];
		const uint8_t *p = t->strs + a->off;
		size_t n = a->len;
		if (!a->normalized || t->n_norms == 0) {
			trie_insert(a->normalized ? &t->trie_norm : &t->trie_raw, p, n, i);
			continue;
		}
		/* matched on normalized text: normalize the content too */
		int k = 0;
		for (int j = 0; j < t->n_norms; j++) {
			if (tok_normalize(t->norms[j], p, n, &nb[k], &cps)) {
				p = nb[k].p;
				n = nb[k].len;
				k ^= 1;
			}
		}
		if (n)
			trie_insert(&t->trie_norm, p, n, i);
	}
	tok_bytes_release(&nb[0]);
	tok_bytes_release(&nb[1]);
	tok_cps_release(&cps);
	if (t->any_single_word && tok_compile("\\w", 2, 0, &t->word_re, err) < 0)
		return -1;
	return 0;
}

void tok_free(struct tok *t)
{
	if (!t)
		return;
	for (int i = 0; i < TOK_SPARE_WORK; i++)
		tok_work_free(atomic_exchange(&t->spare[i], NULL));
	free(t->id_off);
	free(t->id_len);
	free(t->strs);
	free(t->slots);
	free(t->pairs);
	for (int i = 0; i < t->n_steps; i++)
		pcre2_code_free(t->steps[i].re);
	pcre2_code_free(t->word_re);
	free(t->added);
	free(t->trie_raw.n);
	free(t->trie_norm.n);
	free(t);
}

int tok_load_mem(const void *data, size_t len, struct tok **out, char *err)
{
	*out = NULL;
	if (len > TOK_MAX_FILE_BYTES)
		return errf(err, "tokenizer file of %zu bytes (limit %u)", len, TOK_MAX_FILE_BYTES);
	const char *s = data;
	size_t i = 0;
	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	struct tok *t = NULL;
	int rc = -1;
	if (i < len && s[i] == '{') {
		json_error_t je;
		json_t *root = json_loadb(s + i, len - i, JSON_REJECT_DUPLICATES, &je);
		if (!root)
			return errf(err, "invalid JSON at line %d: %s", je.line, je.text);
		if (json_is_object(json_object_get(root, "model"))) {
			t = tok_new(TOK_HF);
			rc = tok_load_hf(t, root, err);
		} else if (json_object_get(root, "bpe_ranks") && json_object_get(root, "pat_str")) {
			t = tok_new(TOK_TIKTOKEN);
			rc = tok_load_tiktoken_json(t, root, err);
		} else {
			errf(err, "JSON is neither a Hugging Face tokenizer.json (\"model\") nor a "
			          "tiktoken encoder (\"bpe_ranks\", \"pat_str\")");
		}
		json_decref(root);
	} else {
		t = tok_new(TOK_TIKTOKEN);
		rc = tok_load_tiktoken_file(t, s, len, err);
	}
	if (rc == 0)
		rc = tok_finish(t, err);
	if (rc < 0) {
		tok_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

int tok_load(const char *path, struct tok **out, char *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return errf(err, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > TOK_MAX_FILE_BYTES) {
		fclose(f);
		return errf(err, "%s: file of %lld bytes (limit %u)", path, (long long)st.st_size,
		            TOK_MAX_FILE_BYTES);
	}
	struct dynbuf b;
	dynbuf_init(&b, TOK_MAX_FILE_BYTES);
	char chunk[65536];
	size_t got;
	int rc = 0;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (dynbuf_add(&b, chunk, got) < 0) {
			rc = errf(err, "%s: larger than %u bytes", path, TOK_MAX_FILE_BYTES);
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = errf(err, "%s: read error", path);
	fclose(f);
	if (rc == 0) {
		char e2[HR_ERRLEN];
		rc = tok_load_mem(b.data ? b.data : "", b.len, out, e2);
		if (rc < 0)
			errf(err, "%s: %s", path, e2);
	}
	dynbuf_release(&b);
	return rc;
}

int tok_decode(const struct tok *t, const uint32_t *ids, size_t n, struct dynbuf *out, char *err)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ids[i];
		if (id >= t->n_ids || t->id_off[id] == TOK_NONE)
			return errf(err, "%u is not a token id", id);
		if (dynbuf_add(out, t->strs + t->id_off[id], t->id_len[id]) < 0)
			return errf(err, "decoded text larger than %zu bytes", out->max);
	}
	return 0;
}

uint32_t tok_vocab_size(const struct tok *t)
{
	return t->n_ids;
}

const char *tok_kind(const struct tok *t)
{
	return t->kind == TOK_HF ? "hf-bpe" : "tiktoken";
}

long long tok_special_id(const struct tok *t, const char *text)
{
	size_t n = strlen(text);
	for (uint32_t i = 0; i < t->n_added; i++)
		if (t->added[i].len == n && memcmp(t->strs + t->added[i].off, text, n) == 0)
			return t->added[i].id;
	return -1;
}
