/* tokbuild.h - builds small byte-level BPE tokenizer.json documents for the
 * unit tests of lib/tokenizer.c and lib/tokprompt.c: GPT-2's byte-to-unicode
 * map (written independently of lib/tok_hf.c), the 256 single bytes as a
 * base vocabulary, and added vocabulary entries and merges. */
#ifndef HR_TEST_TOKBUILD_H
#define HR_TEST_TOKBUILD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tok_unicode.h"
#include "util.h"

/* GPT-2 bytes_to_unicode: spells the n raw bytes as UTF-8 into out (room
 * for 2 * n + 1 bytes). */
static inline void byte_level(const char *raw, size_t n, char *out)
{
	static uint32_t map[256];
	if (!map['A']) {
		int k = 0;
		for (int b = 0; b < 256; b++) {
			int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
			map[b] = keep ? (uint32_t)b : (uint32_t)(256 + k++);
		}
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		o += tok_utf8_put((uint8_t *)out + o, map[(uint8_t)raw[i]]);
	out[o] = '\0';
}

/* A tokenizer.json: the 256 single bytes as ids 0..255, ByteLevel
 * (no prefix space, GPT-2 regex), no normalizer, no merges. */
static inline json_t *hf_base(void)
{
	json_t *vocab = json_object();
	for (int b = 0; b < 256; b++) {
		char raw = (char)b, bl[8];
		byte_level(&raw, 1, bl);
		json_object_set_new(vocab, bl, json_integer(b));
	}
	return json_pack("{s:s, s:[], s:n, s:{s:s, s:b, s:b}, s:{s:s, s:o, s:[]}}", "version",
	                 "1.0", "added_tokens", "normalizer", "pre_tokenizer", "type", "ByteLevel",
	                 "add_prefix_space", 0, "use_regex", 1, "model", "type", "BPE", "vocab",
	                 vocab, "merges");
}

/* Adds raw bytes s to the vocab as id (byte-level spelled). */
static inline void hf_vocab(json_t *root, const char *s, int id)
{
	char bl[256];
	byte_level(s, strlen(s), bl);
	json_object_set_new(json_object_get(json_object_get(root, "model"), "vocab"), bl,
	                    json_integer(id));
}

/* Adds the merge (a, b) of raw strings, as a pair or as "a b". */
static inline void hf_merge(json_t *root, const char *a, const char *b, int as_string)
{
	char ba[128], bb[128];
	byte_level(a, strlen(a), ba);
	byte_level(b, strlen(b), bb);
	json_t *merges = json_object_get(json_object_get(root, "model"), "merges");
	if (as_string) {
		char *s = xasprintf("%s %s", ba, bb);
		json_array_append_new(merges, json_string(s));
		free(s);
	} else {
		json_array_append_new(merges, json_pack("[s,s]", ba, bb));
	}
}

#endif
