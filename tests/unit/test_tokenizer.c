/* test_tokenizer.c - unit tests of the tokenizer (lib/tokenizer.h): tiny
 * hand-made tokenizers (tokenizer.json built with jansson, tiktoken JSON
 * encoders and a .tiktoken rank file) are written into a temporary folder
 * and loaded; their encodings are known by construction. Covers merge
 * order, the string and pair forms of merges, ByteLevel options, every
 * Split behaviour, NFC/NFD, added and special tokens (longest first,
 * lstrip/rstrip/single_word, normalized), \s with U+0085, invalid UTF-8,
 * decoding, counting, long inputs, threads, and refusals of unsupported or
 * broken files. The NFC/NFD tables are checked against known results. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynbuf.h"
#include "tap.h"
#include "tok_unicode.h"
#include "tokbuild.h"
#include "tokenizer.h"
#include "util.h"

static char tmpdir[64];

/* ---- helpers ---- */

static char *write_tmp(const char *name, const void *data, size_t len)
{
	char *path = xasprintf("%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
	return path;
}

/* Loads from a file written from s; NULL (and err) on failure. */
static struct tok *load_str(const char *name, const char *s, char *err)
{
	char *path = write_tmp(name, s, strlen(s));
	struct tok *t = NULL;
	if (tok_load(path, &t, err) < 0)
		t = NULL;
	unlink(path);
	free(path);
	return t;
}

static struct tok *load_json(const char *name, json_t *root, char *err)
{
	char *s = json_dumps(root, JSON_COMPACT);
	struct tok *t = load_str(name, s, err);
	free(s);
	json_decref(root);
	return t;
}

/* The ids of text as "1 2 3" (static buffer). */
static const char *ids_of(const struct tok *t, const char *text, size_t len, unsigned flags)
{
	static char buf[8192];
	struct tok_ids ids;
	tok_ids_init(&ids);
	char err[HR_ERRLEN];
	if (tok_encode_ex(t, text, len, flags, &ids, err) < 0) {
		snprintf(buf, sizeof(buf), "error: %s", err);
		tok_ids_release(&ids);
		return buf;
	}
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < ids.len && n < sizeof(buf) - 16; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u", i ? " " : "", ids.v[i]);
	tok_ids_release(&ids);
	return buf;
}

#define ENC(t, s) ids_of((t), (s), strlen(s), 0)
#define ENC_SP(t, s) ids_of((t), (s), strlen(s), TOK_ENC_SPECIAL)
#define RT(t, lit) check_round_trip((t), (lit), sizeof(lit) - 1)

/* Checks that decoding the ids of text gives text back. */
static void check_round_trip(const struct tok *t, const char *text, size_t len)
{
	struct tok_ids ids;
	tok_ids_init(&ids);
	CHECK_EQ_INT(tok_encode(t, text, len, &ids), 0);
	struct dynbuf out;
	dynbuf_init(&out, 1u << 24);
	char err[HR_ERRLEN];
	CHECK_EQ_INT(tok_decode(t, ids.v, ids.len, &out, err), 0);
	CHECK_MEM(out.data ? out.data : "", out.len, text, len);
	CHECK_EQ_INT(tok_count(t, text, len), (long long)ids.len);
	dynbuf_release(&out);
	tok_ids_release(&ids);
}

static void hf_added(json_t *root, int id, const char *content, int special, int lstrip, int rstrip,
                     int single_word, int normalized)
{
	json_array_append_new(json_object_get(root, "added_tokens"),
	                      json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", id, "content",
	                                content, "special", special, "lstrip", lstrip, "rstrip",
	                                rstrip, "single_word", single_word, "normalized",
	                                normalized));
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64(const uint8_t *p, size_t n, struct dynbuf *out)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
		             (i + 2 < n ? p[i + 2] : 0);
		char q[4] = {b64chars[v >> 18], b64chars[(v >> 12) & 63],
		             i + 1 < n ? b64chars[(v >> 6) & 63] : '=',
		             i + 2 < n ? b64chars[v & 63] : '='};
		dynbuf_add(out, q, 4);
	}
}

/* bpe_ranks of the npm tiktoken format: bytes 0..255 as ranks 0..255, then
 * the given tokens as ranks 256, 257, ... */
static char *tt_ranks(const char *const *extra, size_t n_extra)
{
	struct dynbuf b;
	dynbuf_init(&b, 1u << 24);
	dynbuf_addstr(&b, "! 0");
	for (int i = 0; i < 256; i++) {
		uint8_t c = (uint8_t)i;
		dynbuf_addstr(&b, " ");
		b64(&c, 1, &b);
	}
	for (size_t i = 0; i < n_extra; i++) {
		dynbuf_addstr(&b, " ");
		b64((const uint8_t *)extra[i], strlen(extra[i]), &b);
	}
	return dynbuf_take(&b, NULL);
}

static struct tok *tt_json(const char *pat, const char *const *extra, size_t n_extra,
                           json_t *specials, char *err)
{
	char *ranks = tt_ranks(extra, n_extra);
	json_t *root = json_pack("{s:s, s:s, s:o}", "pat_str", pat, "bpe_ranks", ranks,
	                         "special_tokens", specials ? specials : json_object());
	free(ranks);
	return load_json("tt.json", root, err);
}

/* clang-format off */
#define CL100K_PAT \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|" \
	" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* clang-format on */

/* ---- tests ---- */

static void test_normalize(void)
{
	static const struct {
		const char *in, *nfc, *nfd;
	} cases[] = {
	    {"e\xcc\x81", "\xc3\xa9", "e\xcc\x81"},                     /* e + acute */
	    {"\xc3\xa9", "\xc3\xa9", "e\xcc\x81"},                      /* é */
	    {"e\xcc\xa3\xcc\x82", "\xe1\xbb\x87", "e\xcc\xa3\xcc\x82"}, /* ệ */
	    {"e\xcc\x82\xcc\xa3", "\xe1\xbb\x87", "e\xcc\xa3\xcc\x82"}, /* reordered */
	    {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81",
	     "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"}, /* Hangul L V T */
	    {"\xea\xb0\x80\xe1\x86\xa8", "\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"},
	    {"\xed\x95\x9c", "\xed\x95\x9c", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"}, /* 한 */
	    {"\xe2\x84\xa6", "\xce\xa9", "\xce\xa9"},                                 /* Ohm */
	    {"\xe2\x84\xab", "\xc3\x85", "A\xcc\x8a"},                                /* Angstrom */
	    {"\xef\xa4\x80", "\xe8\xb1\x88", "\xe8\xb1\x88"}, /* CJK compatibility */
	    {"\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc", "\xe0\xa4\x95\xe0\xa4\xbc"}, /* excluded */
	    {"\xcd\x84", "\xcc\x88\xcc\x81", "\xcc\x88\xcc\x81"}, /* non-starter decomposition */
	    {"\xe1\xba\x9b\xcc\xa3", "\xe1\xba\x9b\xcc\xa3", "\xc5\xbf\xcc\xa3\xcc\x87"},
	    {"a\xcc\xb8", "a\xcc\xb8", "a\xcc\xb8"},
	    {"\xcc\x81\x65", "\xcc\x81\x65", "\xcc\x81\x65"}, /* leading mark, then e */
	    {"x\xcc\x80\xcc\x96\xcc\x81\xcc\x97", "x\xcc\x96\xcc\x97\xcc\x80\xcc\x81",
	     "x\xcc\x96\xcc\x97\xcc\x80\xcc\x81"},
	    {"\xe1\xbf\xae", "\xce\x85", "\xc2\xa8\xcc\x81"},
	    {"\xe0\xbd\xb3", "\xe0\xbd\xb1\xe0\xbd\xb2", "\xe0\xbd\xb1\xe0\xbd\xb2"},
	    {"\xe3\x81\x86\xe3\x82\x99", "\xe3\x82\x94", "\xe3\x81\x86\xe3\x82\x99"},
	    {"\xe0\xa7\x87\xe0\xa6\xbe", "\xe0\xa7\x8b", "\xe0\xa7\x87\xe0\xa6\xbe"},
	    {"plain ASCII text", "plain ASCII text", "plain ASCII text"},
	    {"\xe4\xb8\xad\xe6\x96\x87 caf\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87 caf\xc3\xa9",
	     "\xe4\xb8\xad\xe6\x96\x87 cafe\xcc\x81"},
	};
	struct tok_bytes out = {0};
	struct tok_cps cps = {0};
	for (size_t i = 0; i < HR_ARRAY_LEN(cases); i++) {
		const char *in = cases[i].in;
		size_t n = strlen(in);
		for (int f = 0; f < 2; f++) {
			const char *want = f ? cases[i].nfd : cases[i].nfc;
			int changed = tok_normalize(f ? TOK_NORM_NFD : TOK_NORM_NFC,
			                            (const uint8_t *)in, n, &out, &cps);
			const char *got = changed ? (const char *)out.p : in;
			size_t gl = changed ? out.len : n;
			if (!CHECK_MEM(got, gl, want, strlen(want)))
				fprintf(stderr, "  case %zu, %s\n", i, f ? "NFD" : "NFC");
			CHECK_EQ_INT(changed, strcmp(in, want) != 0);
		}
	}
	/* a hostile run of combining marks is sorted in linear time */
	struct dynbuf b;
	dynbuf_init(&b, 1u << 24);
	dynbuf_addstr(&b, "e");
	for (int i = 0; i < 100000; i++)
		dynbuf_addstr(&b, i % 2 ? "\xcc\x81" : "\xcc\x96"); /* 230, 220 */
	CHECK_EQ_INT(tok_normalize(TOK_NORM_NFC, (uint8_t *)b.data, b.len, &out, &cps), 1);
	CHECK_EQ_INT(out.len, b.len - 1); /* é absorbs the first acute */
	CHECK_MEM(out.p, 3, "\xc3\xa9\xcc", 3);
	dynbuf_release(&b);
	tok_bytes_release(&out);
	tok_cps_release(&cps);
	CHECK_STR(tok_unicode_version(), "15.0.0");
}

static void test_utf8(void)
{
	uint32_t cp;
	CHECK_EQ_INT(tok_utf8_next((const uint8_t *)"\xc0\xaf", 2, &cp), 0);         /* overlong */
	CHECK_EQ_INT(tok_utf8_next((const uint8_t *)"\xed\xa0\x80", 3, &cp), 0);     /* surrogate */
	CHECK_EQ_INT(tok_utf8_next((const uint8_t *)"\xf4\x90\x80\x80", 4, &cp), 0); /* > 10FFFF */
	CHECK_EQ_INT(tok_utf8_next((const uint8_t *)"\xf0\x9f\x98\x80", 4, &cp), 4);
	CHECK_EQ_INT(cp, 0x1F600);
	CHECK_EQ_INT(tok_utf8_valid_len((const uint8_t *)"abc\xe4\xb8", 5), 3);
	CHECK_EQ_INT(tok_utf8_invalid_len((const uint8_t *)"\xe4\xb8x", 3), 2);
	CHECK(tok_is_white_space(0x85));
	CHECK(tok_is_white_space(0x3000));
	CHECK(!tok_is_white_space(0xFEFF));
	CHECK(!tok_is_white_space(0x200B));
}

/* tiktoken rule: a piece that is a token is emitted whole, otherwise
 * adjacent parts merge by the rank of their concatenation, lowest first. */
static void test_tiktoken_merges(void)
{
	char err[HR_ERRLEN] = "";
	static const char *const extra[] = {"ab", "cd",           "abcd",      "bc",
	                                    " x", "\xc2\x85\x62", "'\xc5\xbf", " \xc2\x85"};
	struct tok *t = tt_json(CL100K_PAT, extra, HR_ARRAY_LEN(extra),
	                        json_pack("{s:i, s:i}", "<|end|>", 400, "<|end|>x", 401), err);
	if (!CHECK(t != NULL)) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK_STR(tok_kind(t), "tiktoken");
	CHECK_EQ_INT(tok_vocab_size(t), 402);
	CHECK_STR(ENC(t, "abcd"), "258");        /* whole piece */
	CHECK_STR(ENC(t, "abcdab"), "258 256");  /* ab, ab, cd, then abcd */
	CHECK_STR(ENC(t, "abc"), "256 99");      /* ab (256) before bc (259) */
	CHECK_STR(ENC(t, "xbcd"), "120 98 257"); /* cd (257) before bc (259) */
	CHECK_STR(ENC(t, "a x"), "97 260");      /* " x" is one piece */
	/* \s includes U+0085 (NEL), as in Rust regex: "a", " ", NEL "b" (without:
	 * "a", " " NEL, "b") */
	CHECK_STR(ENC(t, "a \xc2\x85\x62"), "97 32 261");
	/* (?i:'s) also matches the long s */
	CHECK_STR(ENC(t, "'\xc5\xbf"), "262");
	/* special tokens: text by default, ids with TOK_ENC_SPECIAL, longest first */
	CHECK_STR(ENC(t, "<|end|>"), "60 124 101 110 100 124 62");
	CHECK_STR(ENC_SP(t, "a<|end|>"), "97 400");
	CHECK_STR(ENC_SP(t, "<|end|>xy"), "401 121");
	CHECK_EQ_INT(tok_special_id(t, "<|end|>"), 400);
	CHECK_EQ_INT(tok_special_id(t, "<|nope|>"), -1);
	/* invalid UTF-8: a run of bad bytes is one piece, merged like any */
	CHECK_STR(ENC(t, "a\xff\x62"), "97 255 98");
	CHECK_STR(ENC(t, "\xc2\x61\x62\x63\x64"), "194 258");
	RT(t, "a\xff\xfe\x62\xe4\xb8 cd\xc2\x85 <|end|>");
	check_round_trip(t, "", 0);
	/* decoding special ids gives their text; unknown ids fail */
	uint32_t ids[] = {400, 97, 999};
	struct dynbuf out;
	dynbuf_init(&out, 64);
	CHECK_EQ_INT(tok_decode(t, ids, 2, &out, err), 0);
	CHECK_STR(out.data, "<|end|>a");
	CHECK_EQ_INT(tok_decode(t, ids + 2, 1, &out, err), -1);
	dynbuf_release(&out);
	dynbuf_init(&out, 3); /* the output bound holds */
	CHECK_EQ_INT(tok_decode(t, ids, 1, &out, err), -1);
	dynbuf_release(&out);
	tok_free(t);
}

/* Long pieces (one regex match of megabytes) encode without trouble. */
static void test_long_input(void)
{
	char err[HR_ERRLEN] = "";
	static const char *const extra[] = {"  ", "    ", "aa", "aaaa"};
	struct tok *t = tt_json(CL100K_PAT, extra, HR_ARRAY_LEN(extra), NULL, err);
	if (!CHECK(t != NULL))
		return;
	size_t n = 1u << 20;
	char *s = xmalloc(n);
	memset(s, ' ', n);
	long long c = tok_count(t, s, n);
	CHECK_EQ_INT(c, (long long)(n / 4)); /* "    " tokens */
	memset(s, 'a', n);
	CHECK_EQ_INT(tok_count(t, s, n), (long long)(n / 4));
	for (size_t i = 0; i < n; i++)
		s[i] = "a \n\t"[i % 4];
	CHECK(tok_count(t, s, n) > 0);
	free(s);
	/* one piece longer than TOK_MAX_PIECE_BYTES is refused */
	n = TOK_MAX_PIECE_BYTES + 1;
	s = xmalloc(n);
	memset(s, ' ', n);
	CHECK_EQ_INT(tok_count(t, s, n), -1);
	CHECK(strstr(ids_of(t, s, n, 0), "no break") != NULL);
	free(s);
	tok_free(t);
}

struct thread_arg {
	const struct tok *t;
	int ok;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	a->ok = 1;
	for (int i = 0; i < 500; i++) {
		long long c = tok_count(a->t, "abcdab abcd  cd", 15);
		if (c != 7)
			a->ok = 0;
	}
	return NULL;
}

static void test_threads(void)
{
	char err[HR_ERRLEN] = "";
	static const char *const extra[] = {"ab", "cd", "abcd"};
	struct tok *t = tt_json(CL100K_PAT, extra, HR_ARRAY_LEN(extra), NULL, err);
	if (!CHECK(t != NULL))
		return;
	CHECK_STR(ENC(t, "abcdab abcd  cd"), "258 256 32 258 32 32 257");
	pthread_t th[4];
	struct thread_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i].t = t;
		pthread_create(&th[i], NULL, thread_main, &args[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(args[i].ok);
	}
	tok_free(t);
}

/* A bare .tiktoken file: recognised by its rank count (r50k_base: 50256). */
static void test_tiktoken_file(void)
{
	struct dynbuf b;
	dynbuf_init(&b, 1u << 26);
	char line[64];
	for (int i = 0; i < 50256; i++) {
		uint8_t tok[8];
		size_t n;
		if (i < 256) {
			tok[0] = (uint8_t)i;
			n = 1;
		} else if (i == 256) {
			memcpy(tok, "he", 2);
			n = 2;
		} else if (i == 257) {
			memcpy(tok, "llo", 3);
			n = 3;
		} else if (i == 258) {
			memcpy(tok, "hello", 5);
			n = 5;
		} else if (i == 259) {
			memcpy(tok, "ll", 2);
			n = 2;
		} else { /* filler that never matches text */
			tok[0] = 0xFF;
			tok[1] = 0xFE;
			memcpy(tok + 2, &i, 4);
			n = 6;
		}
		b64(tok, n, &b);
		snprintf(line, sizeof(line), " %d\n", i);
		dynbuf_addstr(&b, line);
	}
	char *path = write_tmp("r50k.tiktoken", b.data, b.len);
	struct tok *t;
	char err[HR_ERRLEN] = "";
	if (CHECK_EQ_INT(tok_load(path, &t, err), 0)) {
		CHECK_STR(ENC(t, "hello"), "258");
		CHECK_STR(ENC(t, "hellohe"), "258 256"); /* he, ll, llo? ll first: he ll o he */
		CHECK_STR(ENC(t, "x's"), "120 39 115");  /* GPT-2 pattern: x, 's */
		CHECK_STR(ENC(t, "<|endoftext|>"),
		          "60 124 101 110 100 111 102 116 101 120 116 124 62");
		CHECK_STR(ENC_SP(t, "<|endoftext|>"), "50256");
		tok_free(t);
	} else {
		fprintf(stderr, "  %s\n", err);
	}
	unlink(path);
	free(path);
	/* an unknown rank count is refused */
	dynbuf_reset(&b);
	for (int i = 0; i < 256; i++) {
		uint8_t c = (uint8_t)i;
		b64(&c, 1, &b);
		snprintf(line, sizeof(line), " %d\n", i);
		dynbuf_addstr(&b, line);
	}
	t = load_str("small.tiktoken", b.data, err);
	CHECK(t == NULL);
	CHECK(strstr(err, "no known encoding") != NULL);
	dynbuf_release(&b);
}

/* ids in the test tokenizer.json beyond the 256 bytes */
enum { AB = 300, BC, ABC, SP_A, SP_AB, E_ACUTE, E_COMB };

static void test_hf_merges(void)
{
	char err[HR_ERRLEN] = "";
	for (int form = 0; form < 2; form++) {
		/* merge order decides, not vocab ids */
		json_t *root = hf_base();
		hf_vocab(root, "ab", AB);
		hf_vocab(root, "bc", BC);
		hf_vocab(root, "abc", ABC);
		hf_merge(root, "b", "c", form);
		hf_merge(root, "a", "b", form);
		hf_merge(root, "a", "bc", form);
		struct tok *t = load_json("m.json", root, err);
		if (!CHECK(t != NULL)) {
			fprintf(stderr, "  %s\n", err);
			continue;
		}
		CHECK_STR(tok_kind(t), "hf-bpe");
		CHECK_STR(ENC(t, "abc"), "302"); /* bc, then a+bc */
		CHECK_STR(ENC(t, "ab"), "300");
		CHECK_STR(ENC(t, "abab"), "300 300");
		CHECK_STR(ENC(t, "cab"), "99 300");
		tok_free(t);
	}
	/* whole-word vocab entries do not apply without ignore_merges */
	json_t *root = hf_base();
	hf_vocab(root, "ab", AB);
	hf_vocab(root, "bc", BC);
	hf_vocab(root, "abc", ABC);
	hf_merge(root, "a", "b", 0);
	hf_merge(root, "b", "c", 0);
	struct tok *t = load_json("m.json", root, err);
	CHECK_STR(ENC(t, "abc"), "300 99");
	tok_free(t);
	root = hf_base();
	hf_vocab(root, "ab", AB);
	hf_vocab(root, "bc", BC);
	hf_vocab(root, "abc", ABC);
	hf_merge(root, "a", "b", 0);
	hf_merge(root, "b", "c", 0);
	json_object_set_new(json_object_get(root, "model"), "ignore_merges", json_true());
	t = load_json("m.json", root, err);
	CHECK_STR(ENC(t, "abc"), "302");
	CHECK_STR(ENC(t, "abcb"), "300 99 98"); /* not in the vocab: merged */
	tok_free(t);
}

static void test_hf_byte_level(void)
{
	char err[HR_ERRLEN] = "";
	json_t *root = hf_base();
	hf_vocab(root, " a", SP_A);
	hf_vocab(root, " ab", SP_AB);
	hf_vocab(root, "ab", AB);
	hf_merge(root, " ", "a", 0);
	hf_merge(root, " a", "b", 0);
	hf_merge(root, "a", "b", 0);
	json_t *copy = json_deep_copy(root);
	struct tok *t = load_json("bl.json", root, err);
	if (!CHECK(t != NULL))
		return;
	/* GPT-2 regex: " ab" is one piece, "'s" another */
	CHECK_STR(ENC(t, "ab ab"), "300 304");
	CHECK_STR(ENC(t, "x's"), "120 39 115");
	CHECK_STR(ENC(t, "\n\xc3\xa9"), "10 195 169");
	RT(t, "ab ab \xe4\xb8\xad\xff");
	tok_free(t);
	/* add_prefix_space: every piece of the pre-tokenizer gets a space */
	json_object_set_new(json_object_get(copy, "pre_tokenizer"), "add_prefix_space",
	                    json_true());
	json_t *copy2 = json_deep_copy(copy);
	t = load_json("bl2.json", copy, err);
	CHECK_STR(ENC(t, "ab"), "304");
	tok_free(t);
	/* use_regex false: the whole text is one piece */
	json_object_set_new(json_object_get(copy2, "pre_tokenizer"), "add_prefix_space",
	                    json_false());
	json_object_set_new(json_object_get(copy2, "pre_tokenizer"), "use_regex", json_false());
	t = load_json("bl3.json", copy2, err);
	CHECK_STR(ENC(t, "x ab"), "120 304");
	tok_free(t);
}

/* Split behaviours, observed through whole-piece vocab entries
 * (ignore_merges): the example of the Hugging Face documentation. */
static void test_hf_split(void)
{
	static const struct {
		const char *behavior;
		int invert;
		const char *want;
	} cases[] = {
	    {"Removed", 0, "500 501 502"},
	    {"Isolated", 0, "500 45 501 45 45 502"},
	    {"MergedWithPrevious", 0, "503 504 45 502"},
	    {"MergedWithNext", 0, "500 505 45 506"},
	    {"Contiguous", 0, "500 45 501 507 502"},
	    {"Removed", 1, "45 45 45"},
	};
	static const char *const words[] = {"the",    "final",  "countdown",  "the-",
	                                    "final-", "-final", "-countdown", "--"};
	for (size_t i = 0; i < HR_ARRAY_LEN(cases); i++) {
		char err[HR_ERRLEN] = "";
		json_t *root = hf_base();
		for (size_t w = 0; w < HR_ARRAY_LEN(words); w++)
			hf_vocab(root, words[w], 500 + (int)w);
		json_object_set_new(json_object_get(root, "model"), "ignore_merges", json_true());
		json_t *split = json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern",
		                          i % 2 ? "Regex" : "String", "-", "behavior",
		                          cases[i].behavior, "invert", cases[i].invert);
		json_object_set_new(root, "pre_tokenizer",
		                    json_pack("{s:s, s:[o, {s:s, s:b, s:b}]}", "type", "Sequence",
		                              "pretokenizers", split, "type", "ByteLevel",
		                              "add_prefix_space", 0, "use_regex", 0));
		struct tok *t = load_json("split.json", root, err);
		if (!CHECK(t != NULL)) {
			fprintf(stderr, "  %s\n", err);
			continue;
		}
		if (!CHECK_STR(ENC(t, "the-final--countdown"), cases[i].want))
			fprintf(stderr, "  behavior %s invert %d\n", cases[i].behavior,
			        cases[i].invert);
		tok_free(t);
	}
}

static void test_hf_normalizers(void)
{
	char err[HR_ERRLEN] = "";
	for (int nfd = 0; nfd < 2; nfd++) {
		json_t *root = hf_base();
		hf_vocab(root, "\xc3\xa9", E_ACUTE);
		hf_vocab(root, "e\xcc\x81", E_COMB);
		hf_vocab(root, "\xcc\x81", 307);
		json_object_set_new(json_object_get(root, "model"), "ignore_merges", json_true());
		json_object_set_new(root, "normalizer",
		                    json_pack("{s:s, s:[{s:s}]}", "type", "Sequence", "normalizers",
		                              "type", nfd ? "NFD" : "NFC"));
		struct tok *t = load_json("norm.json", root, err);
		if (!CHECK(t != NULL)) {
			fprintf(stderr, "  %s\n", err);
			continue;
		}
		/* NFD: "e" is a letter, U+0301 a mark: two pieces of the GPT-2 regex */
		const char *want = nfd ? "101 307" : "305";
		CHECK_STR(ENC(t, "\xc3\xa9"), want);
		CHECK_STR(ENC(t, "e\xcc\x81"), want);
		tok_free(t);
	}
}

static void test_hf_added(void)
{
	char err[HR_ERRLEN] = "";
	json_t *root = hf_base();
	hf_vocab(root, "ab", AB);
	hf_merge(root, "a", "b", 0);
	hf_added(root, 400, "<s>", 1, 0, 0, 0, 0);
	hf_added(root, 401, "<t>", 0, 0, 0, 0, 0);
	hf_added(root, 402, "<t>ab", 0, 0, 0, 0, 0);
	hf_added(root, 403, "<l>", 0, 1, 1, 0, 0);
	hf_added(root, 404, "<w>", 0, 0, 0, 1, 0);
	hf_added(root, 405, "\xc3\xa9", 0, 0, 0, 0, 1); /* normalized: matched after NFC */
	json_object_set_new(root, "normalizer", json_pack("{s:s}", "type", "NFC"));
	struct tok *t = load_json("added.json", root, err);
	if (!CHECK(t != NULL)) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK_EQ_INT(tok_vocab_size(t), 406);
	/* special: plain text by default */
	CHECK_STR(ENC(t, "<s>"), "60 115 62");
	CHECK_STR(ENC_SP(t, "ab<s>ab"), "300 400 300");
	/* not special: always; longest first */
	CHECK_STR(ENC(t, "x<t>y"), "120 401 121");
	CHECK_STR(ENC(t, "<t>abc"), "402 99");
	/* lstrip/rstrip swallow the whitespace around */
	CHECK_STR(ENC(t, "ab  <l>\t\nab"), "300 403 300");
	CHECK_STR(ENC(t, "ab\xe3\x80\x80<l>"), "300 403"); /* U+3000 is white space */
	/* single_word: only between non-word characters */
	CHECK_STR(ENC(t, "a<w>b"), "97 60 119 62 98");
	CHECK_STR(ENC(t, "a <w> b"), "97 32 404 32 98");
	CHECK_STR(ENC(t, "\xc3\xa9<w>"), "405 60 119 62");
	/* normalized=true: found in the NFC form of decomposed text */
	CHECK_STR(ENC(t, "xe\xcc\x81y"), "120 405 121");
	/* an added token after invalid bytes */
	CHECK_STR(ENC(t, "\xff<t>"), "255 401");
	RT(t, "ab<t>ab<s>\xff");
	tok_free(t);
}

/* Files that must be refused with a message, never crash. */
static void test_refusals(void)
{
	static const struct {
		const char *what, *json, *msg;
	} bad[] = {
	    {"not JSON", "{\"model\": ", "invalid JSON"},
	    {"duplicate key", "{\"model\": {}, \"model\": {}}", "invalid JSON"},
	    {"neither format", "{\"x\": 1}", "neither"},
	    {"WordPiece", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
	     "unsupported model"},
	    {"no vocab",
	     "{\"model\": {\"type\": \"BPE\", \"merges\": []}, \"pre_tokenizer\": {\"type\": "
	     "\"ByteLevel\"}}",
	     "vocab"},
	    {"not byte-level",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": "
	     "null}",
	     "byte-level"},
	    {"Metaspace",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": "
	     "{\"type\": \"Metaspace\"}}",
	     "Metaspace"},
	    {"Lowercase",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"normalizer\": "
	     "{\"type\": \"Lowercase\"}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	     "Lowercase"},
	    {"merge out of vocab",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}, "
	     "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	     "not in the vocab"},
	    {"bad merge",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}, "
	     "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	     "merge 1"},
	    {"huge id",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 99999999999}, \"merges\": []}, "
	     "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	     "valid id"},
	    {"duplicate id",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	     "twice"},
	    {"bad regex",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": "
	     "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
	     "bad pattern"},
	    {"Split after ByteLevel",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": "
	     "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": "
	     "\"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Isolated\"}]}}",
	     "after ByteLevel"},
	    {"empty added token",
	     "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	     "\"pre_tokenizer\": "
	     "{\"type\": \"ByteLevel\"}, \"added_tokens\": [{\"id\": 1, \"content\": \"\"}]}",
	     "empty"},
	    {"tiktoken without single bytes",
	     "{\"pat_str\": \"\\\\S+\", \"bpe_ranks\": \"! 0 YQ==\"}", "single byte"},
	    {"tiktoken bad base64", "{\"pat_str\": \"\\\\S+\", \"bpe_ranks\": \"! 0 Y*==\"}",
	     "base64"},
	    {"tiktoken duplicate", "{\"pat_str\": \"\\\\S+\", \"bpe_ranks\": \"! 0 YQ== YQ==\"}",
	     "duplicates"},
	    {"rank file garbage", "hello world\n", "not '<base64 token> <rank>'"},
	    {"empty file", "", "no ranks"},
	};
	for (size_t i = 0; i < HR_ARRAY_LEN(bad); i++) {
		char err[HR_ERRLEN] = "";
		struct tok *t = load_str("bad.json", bad[i].json, err);
		if (!CHECK(t == NULL))
			tok_free(t);
		if (!CHECK(strstr(err, bad[i].msg) != NULL))
			fprintf(stderr, "  %s: got '%s'\n", bad[i].what, err);
	}
	/* explicit_n_vocab must agree */
	char err[HR_ERRLEN] = "";
	char *ranks = tt_ranks(NULL, 0);
	json_t *root = json_pack("{s:s, s:s, s:{}, s:i}", "pat_str", "\\S+|\\s+", "bpe_ranks",
	                         ranks, "special_tokens", "explicit_n_vocab", 300);
	free(ranks);
	CHECK(load_json("nv.json", root, err) == NULL);
	CHECK(strstr(err, "explicit_n_vocab") != NULL);
	/* a missing file */
	struct tok *t;
	CHECK_EQ_INT(tok_load("/nonexistent/tokenizer.json", &t, err), -1);
	CHECK(t == NULL);
	CHECK(strstr(err, "/nonexistent/tokenizer.json") != NULL);
	tok_free(NULL);
}

/* A pattern that backtracks without end fails the encoding, it does not hang. */
static void test_runaway_pattern(void)
{
	char err[HR_ERRLEN] = "";
	json_t *root = hf_base();
	json_object_set_new(root, "pre_tokenizer",
	                    json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s, s:b, s:b}]}", "type",
	                              "Sequence", "pretokenizers", "type", "Split", "pattern",
	                              "Regex", "(a|aa)+$", "behavior", "Isolated", "type",
	                              "ByteLevel", "add_prefix_space", 0, "use_regex", 0));
	struct tok *t = load_json("runaway.json", root, err);
	if (!CHECK(t != NULL))
		return;
	CHECK_STR(ENC(t, "aaab"), "97 97 97 98");
	char text[200];
	memset(text, 'a', sizeof(text) - 1);
	text[sizeof(text) - 1] = 'b';
	const char *got = ids_of(t, text, sizeof(text), 0);
	if (!CHECK(strstr(got, "match limit") != NULL))
		fprintf(stderr, "  got %.80s\n", got);
	tok_free(t);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_tokenizer.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_utf8();
	test_normalize();
	test_tiktoken_merges();
	test_tiktoken_file();
	test_long_input();
	test_threads();
	test_hf_merges();
	test_hf_byte_level();
	test_hf_split();
	test_hf_normalizers();
	test_hf_added();
	test_refusals();
	test_runaway_pattern();
	rmdir(tmpdir);
	return tap_done();
}
