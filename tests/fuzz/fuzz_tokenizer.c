/* fuzz_tokenizer.c - libFuzzer target for the tokenizer (lib/tokenizer.h).
 *
 * Input: byte 0 picks what to do with the rest, which is arbitrary bytes
 * (invalid UTF-8 included):
 *   0xFF          load the rest as a tokenizer file (must fail cleanly or
 *                 load); when it loads, encode a fixed text with it
 *   otherwise     encode the rest with one of three tiny built-in
 *                 tokenizers (byte 0 % 3), with special tokens when bit 3
 *                 of byte 0 is set:
 *                 0: tokenizer.json, NFC, Split (cl100k-like) + ByteLevel,
 *                    merges, added tokens with lstrip/rstrip/single_word,
 *                    normalized
 *                 1: tokenizer.json, no normalizer, ByteLevel with GPT-2's
 *                    regex, merges, special and plain added tokens
 *                 2: tiktoken JSON encoder with o200k_base's pattern
 * Checked: encoding succeeds; tok_count agrees with the number of ids;
 * every id decodes; for tokenizers 1 and 2 (no normalizer, no stripping)
 * decoding gives back exactly the input bytes.
 *
 * Build: clang -fsanitize=fuzzer,address -Ilib tests/fuzz/fuzz_tokenizer.c \
 *        lib/tok*.c lib/tokenizer.c lib/dynbuf.c lib/util.c \
 *        $(pkg-config --cflags --libs jansson libpcre2-8)
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "fuzz.h"
#include "tokenizer.h"

static struct tok *toks[3];

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	out[0] = (char)(0xC0 | (cp >> 6));
	out[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

/* GPT-2's byte-level spelling of raw bytes. */
static void byte_level(const char *raw, char *out)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
		unsigned b = *p, k = 0, cp = b;
		if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
			for (unsigned x = 0; x < b; x++)
				if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174))
					k++;
			cp = 256 + k;
		}
		o += put_utf8(out + o, cp);
	}
	out[o] = '\0';
}

static struct tok *build_hf(int variant)
{
	static const char *const merges[][2] = {
	    {" ", "t"},           {"t", "h"}, {"th", "e"},  {"h", "e"},   {"i", "n"},
	    {"e", "r"},           {" ", "a"}, {"a", "n"},   {"an", "d"},  {" a", "n"},
	    {"\xc3", "\xa9"},     {" ", " "}, {"  ", "  "}, {"\n", "\n"}, {"\xe4", "\xb8"},
	    {"\xe4\xb8", "\xad"}, {"1", "2"}, {"12", "3"}};
	json_t *vocab = json_object();
	int id = 0;
	char bl[64];
	for (int b = 0; b < 256; b++) {
		char raw[2] = {(char)(b ? b : 1), 0};
		byte_level(raw, bl);
		if (b == 0)
			strcpy(bl, "\xc4\x80"); /* byte 0 is U+0100 */
		json_object_set_new(vocab, bl, json_integer(id++));
	}
	json_t *jm = json_array();
	for (size_t i = 0; i < sizeof(merges) / sizeof(merges[0]); i++) {
		char a[64], b[64], ab[128];
		byte_level(merges[i][0], a);
		byte_level(merges[i][1], b);
		snprintf(ab, sizeof(ab), "%s%s", a, b);
		if (!json_object_get(vocab, ab))
			json_object_set_new(vocab, ab, json_integer(id++));
		if (i % 2) { /* both spellings of a merge */
			json_array_append_new(jm, json_pack("[s,s]", a, b));
		} else {
			char s[140];
			snprintf(s, sizeof(s), "%s %s", a, b);
			json_array_append_new(jm, json_string(s));
		}
	}
	json_t *added = json_pack(
	    "[{s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b, s:b, s:b}, {s:i, s:s, s:b}]", "id",
	    id, "content", "<|endoftext|>", "special", 1, "id", id + 1, "content", "<think>",
	    "special", 0, "id", id + 2, "content", "<|strip|>", "special", 1, "lstrip",
	    variant == 0, "rstrip", variant == 0, "id", id + 3, "content", "<|endoftext|>x",
	    "special", 0);
	if (variant == 0) {
		json_array_append_new(added, json_pack("{s:i, s:s, s:b}", "id", id + 4, "content",
		                                       "<w>", "single_word", 1));
		json_array_append_new(added, json_pack("{s:i, s:s, s:b}", "id", id + 5, "content",
		                                       "\xc3\xa9", "normalized", 1));
	}
	json_t *pre;
	if (variant == 0)
		pre = json_pack(
		    "{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s, s:b, s:b}]}", "type", "Sequence",
		    "pretokenizers", "type", "Split", "pattern", "Regex",
		    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
		    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
		    "behavior", "Isolated", "type", "ByteLevel", "add_prefix_space", 0, "use_regex",
		    0);
	else
		pre = json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0,
		                "use_regex", 1);
	json_t *root =
	    json_pack("{s:o, s:o, s:o, s:{s:s, s:o, s:o}}", "added_tokens", added, "normalizer",
	              variant == 0 ? json_pack("{s:s}", "type", "NFC") : json_null(),
	              "pre_tokenizer", pre, "model", "type", "BPE", "vocab", vocab, "merges", jm);
	char *s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tok *t = NULL;
	char err[256];
	if (tok_load_mem(s, strlen(s), &t, err) < 0) {
		fprintf(stderr, "built-in tokenizer %d: %s\n", variant, err);
		abort();
	}
	free(s);
	return t;
}

static struct tok *build_tiktoken(void)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char *const extra[] = {"th",           "the", " the", "in",   "er",
	                                    " a",           "  ",  "    ", "\n\n", "\xe4\xb8",
	                                    "\xe4\xb8\xad", "12",  "123",  "'s"};
	struct dynbuf b;
	dynbuf_init(&b, 1u << 20);
	dynbuf_addstr(&b, "! 0");
	for (size_t i = 0; i < 256 + sizeof(extra) / sizeof(extra[0]); i++) {
		uint8_t t[8];
		size_t n = 1;
		if (i < 256)
			t[0] = (uint8_t)i;
		else
			memcpy(t, extra[i - 256], n = strlen(extra[i - 256]));
		dynbuf_addstr(&b, " ");
		for (size_t k = 0; k < n; k += 3) {
			uint32_t v = (uint32_t)t[k] << 16 |
			             (k + 1 < n ? (uint32_t)t[k + 1] << 8 : 0) |
			             (k + 2 < n ? t[k + 2] : 0);
			char q[4] = {b64[v >> 18], b64[(v >> 12) & 63],
			             k + 1 < n ? b64[(v >> 6) & 63] : '=',
			             k + 2 < n ? b64[v & 63] : '='};
			dynbuf_add(&b, q, 4);
		}
	}
	/* clang-format off */
	static const char o200k[] =
	    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
	    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
	    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
	    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
	    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
	/* clang-format on */
	json_t *root = json_pack("{s:s, s:s, s:{s:i, s:i}}", "pat_str", o200k, "bpe_ranks", b.data,
	                         "special_tokens", "<|endoftext|>", 1000, "<|endofprompt|>", 1001);
	dynbuf_release(&b);
	char *s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tok *t = NULL;
	char err[256];
	if (tok_load_mem(s, strlen(s), &t, err) < 0) {
		fprintf(stderr, "built-in tiktoken: %s\n", err);
		abort();
	}
	free(s);
	return t;
}

static void check(const struct tok *t, const uint8_t *text, size_t len, unsigned flags,
                  int lossless)
{
	struct tok_ids ids;
	tok_ids_init(&ids);
	char err[256];
	REQUIRE(tok_encode_ex(t, (const char *)text, len, flags, &ids, err) == 0);
	if (!flags)
		REQUIRE(tok_count(t, (const char *)text, len) == (long long)ids.len);
	struct dynbuf out;
	dynbuf_init(&out, 1u << 26);
	REQUIRE(tok_decode(t, ids.v, ids.len, &out, err) == 0);
	if (lossless)
		REQUIRE(out.len == len && (len == 0 || memcmp(out.data, text, len) == 0));
	dynbuf_release(&out);
	tok_ids_release(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] == 0xFF) {
		struct tok *t = NULL;
		char err[256];
		if (tok_load_mem(data + 1, size - 1, &t, err) == 0) {
			static const char text[] =
			    "Hello, world! caf\xc3\xa9 \xe4\xb8\xad 123 \xff<|x|>";
			check(t, (const uint8_t *)text, sizeof(text) - 1, 0, 0);
			check(t, (const uint8_t *)text, sizeof(text) - 1, TOK_ENC_SPECIAL, 0);
			tok_free(t);
		} else {
			REQUIRE(t == NULL && err[0] != '\0');
		}
		return 0;
	}
	if (!toks[0]) {
		toks[0] = build_hf(0);
		toks[1] = build_hf(1);
		toks[2] = build_tiktoken();
	}
	int which = data[0] % 3;
	unsigned flags = data[0] & 8 ? TOK_ENC_SPECIAL : 0;
	check(toks[which], data + 1, size - 1, flags, which != 0);
	return 0;
}
