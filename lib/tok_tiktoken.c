/* tok_tiktoken.c - loads tiktoken encodings into a struct tok: the npm
 * tiktoken package's JSON encoders ({"pat_str", "special_tokens",
 * "bpe_ranks", "explicit_n_vocab"?}, bpe_ranks being lines of
 * "<label> <first rank> <base64> <base64> ...", one rank after another) and
 * `.tiktoken` rank files ("<base64> <rank>" per line), whose pattern and
 * special tokens are those of the known encoding with that many ranks.
 *
 * A tiktoken encoding keeps only the regex matches of the text (unmatched
 * text is dropped, as tiktoken does), emits a piece that is itself a token
 * as is, and otherwise merges byte pairs by the rank of their concatenation.
 */
#include <string.h>

#include "tok_int.h"
#include "util.h"

/* clang-format off */
#define CL100K_PAT \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|" \
	" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define O200K_PAT \
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*" \
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|" \
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+" \
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|" \
	"\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* clang-format on */

struct special {
	const char *text;
	uint32_t id;
};

/* Encodings a bare .tiktoken file may hold, told apart by rank count. */
static const struct builtin {
	const char *name;
	uint32_t n_ranks;
	const char *pat;
	struct special sp[6];
} builtins[] = {
    {"cl100k_base",
     100256,
     CL100K_PAT,
     {{"<|endoftext|>", 100257},
      {"<|fim_prefix|>", 100258},
      {"<|fim_middle|>", 100259},
      {"<|fim_suffix|>", 100260},
      {"<|endofprompt|>", 100276}}},
    {"o200k_base", 199998, O200K_PAT, {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
    {"r50k_base", 50256, TOK_GPT2_PAT, {{"<|endoftext|>", 50256}}},
    {"p50k_base", 50280, TOK_GPT2_PAT, {{"<|endoftext|>", 50256}}},
};

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decodes base64 s[0..n) (padding optional) into out (room for n). Returns
 * the length, or -1 when s is not base64. */
static long b64dec(const char *s, size_t n, uint8_t *out)
{
	while (n && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -1;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return (long)o;
}

static int parse_u32(const char *s, size_t n, uint32_t *out)
{
	if (n == 0 || n > 10)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Next field of a line separated by single spaces (also tabs, \r). */
static int next_field(const char *s, size_t n, size_t *pos, size_t *fs, size_t *fl)
{
	size_t i = *pos;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	if (i >= n)
		return 0;
	size_t st = i;
	while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
		i++;
	*fs = st;
	*fl = i - st;
	*pos = i;
	return 1;
}

static int add_rank(struct tok *t, const char *b64, size_t n, uint32_t rank, char *err)
{
	uint8_t buf[TOK_MAX_TOKEN_BYTES];
	if (n > (size_t)TOK_MAX_TOKEN_BYTES * 4 / 3 + 4)
		return errf(err, "token of rank %u is too long", rank);
	long l = b64dec(b64, n, buf);
	if (l <= 0)
		return errf(err, "rank %u: bad base64 token '%.*s'", rank, (int)(n > 40 ? 40 : n),
		            b64);
	if (rank >= TOK_MAX_IDS)
		return errf(err, "rank %u is past the limit of %u", rank, TOK_MAX_IDS - 1);
	if (rank >= t->n_ids && tok_set_ids(t, rank + 1, err) < 0)
		return -1;
	return tok_set_token(t, rank, buf, (size_t)l, 1, err);
}

static int finish_common(struct tok *t, const char *pat, size_t pat_len, char *err)
{
	pcre2_code *re;
	if (tok_compile(pat, pat_len, 0, &re, err) < 0)
		return -1;
	t->whole_piece = 1;
	return tok_add_step(t, re, TOK_B_REMOVED, 1, 0, err);
}

int tok_load_tiktoken_json(struct tok *t, json_t *root, char *err)
{
	json_t *pat = json_object_get(root, "pat_str");
	json_t *ranks = json_object_get(root, "bpe_ranks");
	json_t *specials = json_object_get(root, "special_tokens");
	json_t *nv = json_object_get(root, "explicit_n_vocab");
	if (!json_is_string(pat) || !json_is_string(ranks))
		return errf(err, "tiktoken encoder: pat_str and bpe_ranks must be strings");
	if (specials && !json_is_object(specials) && !json_is_null(specials))
		return errf(err, "tiktoken encoder: special_tokens must be an object");
	if (nv && !json_is_integer(nv) && !json_is_null(nv))
		return errf(err, "tiktoken encoder: explicit_n_vocab must be an integer");

	const char *s = json_string_value(ranks);
	size_t n = json_string_length(ranks);
	/* first pass: the largest rank, to size the tables once */
	uint64_t n_ranks = 0, top = 0;
	for (size_t ls = 0; ls < n;) {
		size_t le = ls;
		while (le < n && s[le] != '\n')
			le++;
		size_t pos = ls, fs, fl;
		uint32_t start;
		if (next_field(s, le, &pos, &fs, &fl)) {
			if (!next_field(s, le, &pos, &fs, &fl) || parse_u32(s + fs, fl, &start) < 0)
				return errf(err, "bpe_ranks: a line lacks its first rank");
			uint64_t k = 0;
			while (next_field(s, le, &pos, &fs, &fl))
				k++;
			n_ranks += k;
			if (k && start + k > top)
				top = start + k;
		}
		ls = le + 1;
	}
	if (n_ranks == 0)
		return errf(err, "bpe_ranks holds no tokens");
	if (top > TOK_MAX_IDS)
		return errf(err, "rank %llu is past the limit of %u", (unsigned long long)top - 1,
		            TOK_MAX_IDS - 1);
	if (tok_set_ids(t, (uint32_t)top, err) < 0)
		return -1;
	tok_vocab_reserve(t, (uint32_t)n_ranks);
	for (size_t ls = 0; ls < n;) {
		size_t le = ls;
		while (le < n && s[le] != '\n')
			le++;
		size_t pos = ls, fs, fl;
		uint32_t start = 0;
		if (next_field(s, le, &pos, &fs, &fl)) {
			next_field(s, le, &pos, &fs, &fl);
			parse_u32(s + fs, fl, &start);
			uint32_t rank = start;
			while (next_field(s, le, &pos, &fs, &fl))
				if (add_rank(t, s + fs, fl, rank++, err) < 0)
					return -1;
		}
		ls = le + 1;
	}

	size_t n_special = 0;
	if (json_is_object(specials)) {
		const char *key;
		json_t *v;
		json_object_foreach(specials, key, v)
		{
			json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
			if (id < 0 || id >= (json_int_t)TOK_MAX_IDS)
				return errf(err, "special token '%.60s' has no valid id", key);
			if (tok_add_added(t, (uint32_t)id, (const uint8_t *)key, strlen(key), 1, 0,
			                  0, 0, 0, err) < 0)
				return -1;
			n_special++;
		}
	}
	if (json_is_integer(nv) && (json_int_t)(n_ranks + n_special) != json_integer_value(nv))
		return errf(err,
		            "explicit_n_vocab is %lld but there are %llu ranks and %zu special "
		            "tokens",
		            (long long)json_integer_value(nv), (unsigned long long)n_ranks,
		            n_special);
	return finish_common(t, json_string_value(pat), json_string_length(pat), err);
}

int tok_load_tiktoken_file(struct tok *t, const char *s, size_t n, char *err)
{
	uint64_t n_ranks = 0;
	for (size_t ls = 0, line = 1; ls < n; line++) {
		size_t le = ls;
		while (le < n && s[le] != '\n')
			le++;
		size_t pos = ls, fs, fl, rs, rl, xs, xl;
		if (next_field(s, le, &pos, &fs, &fl)) {
			uint32_t rank;
			if (!next_field(s, le, &pos, &rs, &rl) ||
			    parse_u32(s + rs, rl, &rank) < 0 || next_field(s, le, &pos, &xs, &xl))
				return errf(
				    err,
				    "line %zu: not '<base64 token> <rank>' (not a tokenizer "
				    "file?)",
				    line);
			if (add_rank(t, s + fs, fl, rank, err) < 0)
				return -1;
			n_ranks++;
		}
		ls = le + 1;
	}
	if (n_ranks == 0)
		return errf(err, "no ranks (not a tokenizer file?)");
	const struct builtin *b = NULL;
	for (size_t i = 0; i < HR_ARRAY_LEN(builtins); i++)
		if (builtins[i].n_ranks == n_ranks)
			b = &builtins[i];
	if (!b)
		return errf(err,
		            "a .tiktoken file of %llu ranks is no known encoding (cl100k_base, "
		            "o200k_base, r50k_base, p50k_base); use the JSON form with pat_str",
		            (unsigned long long)n_ranks);
	for (size_t i = 0; i < HR_ARRAY_LEN(b->sp) && b->sp[i].text; i++)
		if (tok_add_added(t, b->sp[i].id, (const uint8_t *)b->sp[i].text,
		                  strlen(b->sp[i].text), 1, 0, 0, 0, 0, err) < 0)
			return -1;
	return finish_common(t, b->pat, strlen(b->pat), err);
}
