/* tok_hf.c - loads a Hugging Face tokenizer.json with a byte-level BPE
 * model into a struct tok.
 *
 * Supported: model BPE (vocab, merges as "a b" strings or ["a", "b"]
 * pairs, ignore_merges, unk_token, fuse_unk); normalizer null, NFC, NFD or a
 * Sequence of them; pre_tokenizer Split (Regex or String pattern, every
 * behaviour, invert), ByteLevel (add_prefix_space, use_regex) or a Sequence
 * of Splits ending with one ByteLevel; added_tokens (special or not,
 * lstrip, rstrip, single_word, normalized). Anything else is refused with a
 * message naming it, rather than encoded wrongly. The post_processor
 * (templates adding BOS/EOS) and decoder are not used: encoding never adds
 * tokens, decoding is the byte-level inverse.
 *
 * Vocabulary entries are stored as the bytes they stand for (GPT-2's
 * bytes_to_unicode mapping undone), so encoding works on raw bytes.
 */
#include <string.h>

#include "tok_int.h"
#include "util.h"

/* GPT-2 bytes_to_unicode, inverted: code point (< 324) -> byte, or -1. */
static void byte_level_inverse(int16_t inv[324])
{
	for (int i = 0; i < 324; i++)
		inv[i] = -1;
	int n = 0;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
		if (printable)
			inv[b] = (int16_t)b;
		else
			inv[256 + n++] = (int16_t)b;
	}
}

/* Converts a byte-level string to the bytes it stands for. Returns the
 * length, or -1 when a character is outside the byte-level alphabet (or
 * the result is too long). */
static long from_byte_level(const int16_t inv[324], const char *s, size_t n, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = tok_utf8_next((const uint8_t *)s + i, n - i, &cp);
		if (l == 0 || cp >= 324 || inv[cp] < 0 || o >= TOK_MAX_TOKEN_BYTES)
			return -1;
		out[o++] = (uint8_t)inv[cp];
		i += l;
	}
	return (long)o;
}

static int get_bool(json_t *obj, const char *key, int dflt, int *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return errf(err, "\"%s\" must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

static int parse_normalizer(struct tok *t, json_t *nz, int depth, char *err)
{
	if (!nz || json_is_null(nz))
		return 0;
	if (depth > 4)
		return errf(err, "normalizer Sequences nested too deeply");
	const char *type = json_string_value(json_object_get(nz, "type"));
	if (!json_is_object(nz) || !type)
		return errf(err, "normalizer without a type");
	if (strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(nz, "normalizers");
		if (!json_is_array(list))
			return errf(err, "normalizer Sequence without \"normalizers\"");
		size_t i;
		json_t *v;
		json_array_foreach(list, i, v)
		{
			if (parse_normalizer(t, v, depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	enum tok_norm_form f;
	if (strcmp(type, "NFC") == 0)
		f = TOK_NORM_NFC;
	else if (strcmp(type, "NFD") == 0)
		f = TOK_NORM_NFD;
	else
		return errf(err, "unsupported normalizer %.40s (supported: NFC, NFD, Sequence)",
		            type);
	if (t->n_norms >= TOK_MAX_NORMALIZERS)
		return errf(err, "more than %d normalizers", TOK_MAX_NORMALIZERS);
	t->norms[t->n_norms++] = f;
	return 0;
}

static int parse_pretok(struct tok *t, json_t *pt, int depth, int *byte_level, char *err)
{
	if (depth > 4)
		return errf(err, "pre_tokenizer Sequences nested too deeply");
	const char *type = json_string_value(json_object_get(pt, "type"));
	if (!json_is_object(pt) || !type)
		return errf(err, "pre_tokenizer without a type");
	if (strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(pt, "pretokenizers");
		if (!json_is_array(list))
			return errf(err, "pre_tokenizer Sequence without \"pretokenizers\"");
		size_t i;
		json_t *v;
		json_array_foreach(list, i, v)
		{
			if (parse_pretok(t, v, depth + 1, byte_level, err) < 0)
				return -1;
		}
		return 0;
	}
	if (*byte_level)
		return errf(err, "unsupported: pre_tokenizer %.40s after ByteLevel", type);
	if (strcmp(type, "ByteLevel") == 0) {
		int prefix = 0, use_regex = 0;
		if (get_bool(pt, "add_prefix_space", 1, &prefix, err) < 0 ||
		    get_bool(pt, "use_regex", 1, &use_regex, err) < 0)
			return -1;
		pcre2_code *re = NULL;
		if (use_regex && tok_compile(TOK_GPT2_PAT, strlen(TOK_GPT2_PAT), 0, &re, err) < 0)
			return -1;
		*byte_level = 1;
		return tok_add_step(t, re, TOK_B_ISOLATED, 0, prefix, err);
	}
	if (strcmp(type, "Split") == 0) {
		json_t *pat = json_object_get(pt, "pattern");
		json_t *rx = json_object_get(pat, "Regex");
		json_t *str = json_object_get(pat, "String");
		const char *beh = json_string_value(json_object_get(pt, "behavior"));
		int invert = 0;
		if (get_bool(pt, "invert", 0, &invert, err) < 0)
			return -1;
		if (!json_is_string(rx) && !json_is_string(str))
			return errf(err, "Split pre_tokenizer without a Regex or String pattern");
		if (!beh)
			return errf(err, "Split pre_tokenizer without a behavior");
		static const struct {
			const char *name;
			enum tok_behavior b;
		} behaviors[] = {{"Removed", TOK_B_REMOVED},
		                 {"Isolated", TOK_B_ISOLATED},
		                 {"MergedWithPrevious", TOK_B_MERGED_PREV},
		                 {"MergedWithNext", TOK_B_MERGED_NEXT},
		                 {"Contiguous", TOK_B_CONTIGUOUS}};
		size_t bi = 0;
		while (bi < HR_ARRAY_LEN(behaviors) && strcmp(behaviors[bi].name, beh) != 0)
			bi++;
		if (bi == HR_ARRAY_LEN(behaviors))
			return errf(err, "unknown Split behavior %.40s", beh);
		json_t *p = json_is_string(rx) ? rx : str;
		if (json_string_length(p) == 0)
			return errf(err, "Split pre_tokenizer with an empty pattern");
		pcre2_code *re;
		if (tok_compile(json_string_value(p), json_string_length(p), p == str, &re, err) <
		    0)
			return -1;
		return tok_add_step(t, re, behaviors[bi].b, invert, 0, err);
	}
	return errf(err, "unsupported pre_tokenizer %.40s (supported: Split, ByteLevel, Sequence)",
	            type);
}

static int check_model(json_t *model, char *err)
{
	const char *type = json_string_value(json_object_get(model, "type"));
	if (type ? strcmp(type, "BPE") != 0 : !json_object_get(model, "merges"))
		return errf(err, "unsupported model type %.40s (only BPE)", type ? type : "(none)");
	json_t *v = json_object_get(model, "dropout");
	if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0.0))
		return errf(err, "unsupported: BPE dropout");
	const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (size_t i = 0; i < HR_ARRAY_LEN(affix); i++) {
		v = json_object_get(model, affix[i]);
		if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
			return errf(err, "unsupported: BPE %s", affix[i]);
	}
	v = json_object_get(model, "byte_fallback");
	if (v && json_is_true(v))
		return errf(err, "unsupported: BPE byte_fallback (not a byte-level tokenizer)");
	if (!json_is_object(json_object_get(model, "vocab")))
		return errf(err, "BPE model without a vocab object");
	if (!json_is_array(json_object_get(model, "merges")))
		return errf(err, "BPE model without a merges array");
	return 0;
}

static int load_vocab(struct tok *t, json_t *vocab, const int16_t inv[324], char *err)
{
	const char *key;
	json_t *v;
	json_int_t top = -1;
	json_object_foreach(vocab, key, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= (json_int_t)TOK_MAX_IDS)
			return errf(err, "vocab entry '%.60s' has no valid id", key);
		if (json_integer_value(v) > top)
			top = json_integer_value(v);
	}
	if (top < 0)
		return errf(err, "empty vocab");
	if (tok_set_ids(t, (uint32_t)top + 1, err) < 0)
		return -1;
	tok_vocab_reserve(t, (uint32_t)json_object_size(vocab));
	uint8_t buf[TOK_MAX_TOKEN_BYTES];
	json_object_foreach(vocab, key, v)
	{
		uint32_t id = (uint32_t)json_integer_value(v);
		size_t kl = strlen(key); /* jansson keys hold no NUL */
		long l = from_byte_level(inv, key, kl, buf);
		if (l > 0) {
			if (tok_set_token(t, id, buf, (size_t)l, 1, err) < 0)
				return -1;
		} else if (tok_set_token(t, id, (const uint8_t *)key, kl, 0, err) < 0) {
			/* not byte-level text: kept for decoding only */
			return -1;
		}
	}
	return 0;
}

static int merge_parts(json_t *m, const char **a, size_t *al, const char **b, size_t *bl)
{
	if (json_is_string(m)) {
		const char *s = json_string_value(m);
		size_t n = json_string_length(m);
		const char *sp = memchr(s, ' ', n);
		if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
			return -1;
		*a = s;
		*al = (size_t)(sp - s);
		*b = sp + 1;
		*bl = n - *al - 1;
		return 0;
	}
	if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
	    json_is_string(json_array_get(m, 1))) {
		*a = json_string_value(json_array_get(m, 0));
		*al = json_string_length(json_array_get(m, 0));
		*b = json_string_value(json_array_get(m, 1));
		*bl = json_string_length(json_array_get(m, 1));
		return 0;
	}
	return -1;
}

static int load_merges(struct tok *t, json_t *merges, const int16_t inv[324], char *err)
{
	size_t n = json_array_size(merges);
	if (n >= UINT32_MAX)
		return errf(err, "too many merges");
	tok_pairs_reserve(t, (uint32_t)n);
	uint8_t ab[2 * TOK_MAX_TOKEN_BYTES];
	size_t i;
	json_t *m;
	json_array_foreach(merges, i, m)
	{
		const char *a, *b;
		size_t al, bl;
		if (merge_parts(m, &a, &al, &b, &bl) < 0)
			return errf(err, "merge %zu is not \"a b\" or [\"a\", \"b\"]", i + 1);
		long la = from_byte_level(inv, a, al, ab);
		long lb = la > 0 ? from_byte_level(inv, b, bl, ab + la) : -1;
		uint32_t ia = la > 0 ? tok_vocab_find(t, ab, (size_t)la) : TOK_NONE;
		uint32_t ib = lb > 0 ? tok_vocab_find(t, ab + la, (size_t)lb) : TOK_NONE;
		uint32_t im = ia != TOK_NONE && ib != TOK_NONE
		                  ? tok_vocab_find(t, ab, (size_t)(la + lb))
		                  : TOK_NONE;
		if (im == TOK_NONE)
			return errf(err,
			            "merge %zu ('%.40s' '%.40s') uses a token not in the vocab",
			            i + 1, a, b);
		tok_pair_set(t, ia, ib, (uint32_t)i, im);
	}
	return 0;
}

static int load_added(struct tok *t, json_t *added, char *err)
{
	if (!added || json_is_null(added))
		return 0;
	if (!json_is_array(added))
		return errf(err, "added_tokens must be an array");
	size_t i;
	json_t *a;
	json_array_foreach(added, i, a)
	{
		json_t *id = json_object_get(a, "id");
		json_t *content = json_object_get(a, "content");
		if (!json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= (json_int_t)TOK_MAX_IDS || !json_is_string(content))
			return errf(err, "added token %zu lacks a valid id or content", i);
		int special = 0, lstrip = 0, rstrip = 0, single_word = 0, normalized = 0;
		if (get_bool(a, "special", 0, &special, err) < 0 ||
		    get_bool(a, "lstrip", 0, &lstrip, err) < 0 ||
		    get_bool(a, "rstrip", 0, &rstrip, err) < 0 ||
		    get_bool(a, "single_word", 0, &single_word, err) < 0 ||
		    get_bool(a, "normalized", !special, &normalized, err) < 0)
			return -1;
		if (tok_add_added(t, (uint32_t)json_integer_value(id),
		                  (const uint8_t *)json_string_value(content),
		                  json_string_length(content), special, lstrip, rstrip, single_word,
		                  normalized, err) < 0)
			return -1;
	}
	return 0;
}

int tok_load_hf(struct tok *t, json_t *root, char *err)
{
	json_t *model = json_object_get(root, "model");
	if (check_model(model, err) < 0)
		return -1;
	if (parse_normalizer(t, json_object_get(root, "normalizer"), 0, err) < 0)
		return -1;
	json_t *pt = json_object_get(root, "pre_tokenizer");
	int byte_level = 0;
	if (pt && !json_is_null(pt) && parse_pretok(t, pt, 0, &byte_level, err) < 0)
		return -1;
	if (!byte_level)
		return errf(err, "unsupported: not a byte-level BPE (no ByteLevel pre_tokenizer)");
	int ignore_merges = 0;
	if (get_bool(model, "ignore_merges", 0, &ignore_merges, err) < 0 ||
	    get_bool(model, "fuse_unk", 0, &t->fuse_unk, err) < 0)
		return -1;
	t->whole_piece = ignore_merges;

	int16_t inv[324];
	byte_level_inverse(inv);
	if (load_vocab(t, json_object_get(model, "vocab"), inv, err) < 0 ||
	    load_merges(t, json_object_get(model, "merges"), inv, err) < 0)
		return -1;
	json_t *unk = json_object_get(model, "unk_token");
	if (json_is_string(unk)) {
		uint8_t buf[TOK_MAX_TOKEN_BYTES];
		long l = from_byte_level(inv, json_string_value(unk), json_string_length(unk), buf);
		t->unk_id = l > 0 ? tok_vocab_find(t, buf, (size_t)l) : TOK_NONE;
		if (t->unk_id == TOK_NONE)
			return errf(err, "unk_token '%.40s' is not in the vocab",
			            json_string_value(unk));
	}
	return load_added(t, json_object_get(root, "added_tokens"), err);
}
