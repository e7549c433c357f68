/* test_tokprompt.c - unit tests of exact-length prompts (lib/tokprompt.h)
 * over the bundled corpus (lib/corpus.h), with a small hand-made byte-level
 * BPE tokenizer.json whose merges make a few common words one token each
 * (" the", " and", ...), so that pieces of one and of many tokens exist.
 * Token-exactness with real tokenizers (cl100k, o200k, Qwen3) is checked
 * end to end by tests/js/test_exact_isl.mjs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "dynbuf.h"
#include "tap.h"
#include "tokbuild.h"
#include "tokenizer.h"
#include "tokprompt.h"
#include "util.h"

/* The 256 bytes, plus each word in `words` (with its leading space) as one
 * token built by a chain of merges. */
static struct tok *small_tokenizer(const char *const *words)
{
	json_t *root = hf_base();
	json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
	int id = 256;
	for (const char *const *w = words; *w; w++) {
		char prefix[64], whole[64], right[2] = "", bl[256];
		size_t n = strlen(*w);
		for (size_t k = 2; k <= n; k++) {
			memcpy(prefix, *w, k - 1);
			prefix[k - 1] = '\0';
			memcpy(whole, *w, k);
			whole[k] = '\0';
			right[0] = (*w)[k - 1];
			byte_level(whole, k, bl);
			if (json_object_get(vocab, bl))
				continue;
			hf_vocab(root, whole, id++);
			hf_merge(root, prefix, right, 1);
		}
	}
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tok *tk = NULL;
	char err[512];
	if (tok_load_mem(text, strlen(text), &tk, err) < 0)
		fprintf(stderr, "tokenizer: %s\n", err);
	free(text);
	return tk;
}

static void test_exact_lengths(void)
{
	static const char *const words[] = {" the", " and", " of", " he", " unto", " God",
	                                    " his", " in", NULL};
	struct tok *tk = small_tokenizer(words);
	if (!CHECK(tk != NULL))
		return;
	size_t len;
	const char *text = corpus_text(&len);
	CHECK(len > 300000);
	CHECK_EQ_INT(text[len], '\0');
	struct tokprompt tp;
	char err[512] = "";
	if (!CHECK_EQ_INT(tokprompt_init(&tp, tk, text, len, err), 0)) {
		fprintf(stderr, "%s\n", err);
		tok_free(tk);
		return;
	}
	CHECK(tp.n > 50000);
	CHECK(tp.one > 1000);
	int bad = 0;
	for (int k = 0; k < 400; k++) {
		int n = 1 + (k * 7919) % 3000;
		struct dynbuf d;
		dynbuf_init(&d, 1u << 24);
		CHECK_EQ_INT(tokprompt_build(&tp, (uint64_t)k * 0x9E3779B97F4A7C15ull, n, 0, &d), 0);
		if (tok_count(tk, d.data, d.len) != n)
			bad++;
		dynbuf_release(&d);
	}
	CHECK_EQ_INT(bad, 0);

	/* the same pick gives the same prompt; another pick another one */
	struct dynbuf a, b, c;
	dynbuf_init(&a, 1u << 20);
	dynbuf_init(&b, 1u << 20);
	dynbuf_init(&c, 1u << 20);
	tokprompt_build(&tp, 12345, 200, 0, &a);
	tokprompt_build(&tp, 12345, 200, 0, &b);
	tokprompt_build(&tp, 54321, 200, 0, &c);
	CHECK_MEM(a.data, a.len, b.data, b.len);
	CHECK(a.len != c.len || memcmp(a.data, c.data, a.len) != 0);
	dynbuf_release(&a);
	dynbuf_release(&b);
	dynbuf_release(&c);

	/* JSON-escaped: a JSON parser gives back exactly the plain text
	 * (prompts that cross a paragraph carry newlines) */
	for (int k = 0; k < 50; k++) {
		struct dynbuf plain, js;
		dynbuf_init(&plain, 1u << 20);
		dynbuf_init(&js, 1u << 20);
		dynbuf_addstr(&js, "\"");
		tokprompt_build(&tp, (uint64_t)k * 7777, 1500, 0, &plain);
		tokprompt_build(&tp, (uint64_t)k * 7777, 1500, 1, &js);
		dynbuf_addstr(&js, "\"");
		json_t *v = json_loadb(js.data, js.len, JSON_DECODE_ANY, NULL);
		CHECK(json_is_string(v));
		if (v)
			CHECK_MEM(json_string_value(v), json_string_length(v), plain.data, plain.len);
		json_decref(v);
		dynbuf_release(&plain);
		dynbuf_release(&js);
	}

	/* a buffer too small for the prompt: -1, not an overrun */
	struct dynbuf small;
	dynbuf_init(&small, 64);
	CHECK_EQ_INT(tokprompt_build(&tp, 1, 500, 0, &small), -1);
	dynbuf_release(&small);
	tokprompt_release(&tp);
	tok_free(tk);
}

static void test_no_one_token_piece(void)
{
	static const char *const none[] = {NULL};
	struct tok *tk = small_tokenizer(none); /* bytes only: " x" is two tokens */
	if (!CHECK(tk != NULL))
		return;
	struct tokprompt tp;
	char err[512] = "";
	static const char text[] = "In the beginning God created the heaven and the earth.";
	CHECK_EQ_INT(tokprompt_init(&tp, tk, text, sizeof text - 1, err), -1);
	CHECK(strstr(err, "one-token") != NULL);
	CHECK_EQ_INT(tokprompt_init(&tp, tk, text, 0, err), -1);
	tok_free(tk);
}

int main(void)
{
	test_exact_lengths();
	test_no_one_token_piece();
	return tap_done();
}
