/* tok_int.h - internals shared by the tokenizer's files: the loaded
 * tokenizer (struct tok), its tables, and the helpers the loaders use to
 * fill them. tokenizer.c owns the tables and the encoder; tok_hf.c and
 * tok_tiktoken.c parse the two file formats into them.
 */
#ifndef HR_TOK_INT_H
#define HR_TOK_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tok_unicode.h"
#include "tokenizer.h"

#define TOK_NONE UINT32_MAX
#define TOK_SPARE_WORK 4 /* encoder scratch areas kept between calls (threads) */

/* GPT-2's pre-split pattern (Hugging Face ByteLevel use_regex, r50k_base). */
#define TOK_GPT2_PAT                                                                               \
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

enum tok_kind_e { TOK_TIKTOKEN, TOK_HF };

/* Split behaviours (Hugging Face SplitDelimiterBehavior). tiktoken keeps
 * only the matches: Removed with invert. */
enum tok_behavior {
	TOK_B_REMOVED,
	TOK_B_ISOLATED,
	TOK_B_MERGED_PREV,
	TOK_B_MERGED_NEXT,
	TOK_B_CONTIGUOUS
};

/* One pre-tokenizer step, applied to every piece the previous step made. */
struct tok_step {
	pcre2_code *re; /* owned; NULL: no splitting (ByteLevel use_regex false) */
	enum tok_behavior behavior;
	int invert;
	int prefix_space; /* ByteLevel add_prefix_space */
};

struct tok_added {
	uint32_t id;
	uint32_t off, len; /* content: tok->strs + off */
	uint8_t special, lstrip, rstrip, single_word, normalized;
};

/* Byte trie of added tokens, for leftmost-longest matching. */
struct tok_trie_node {
	uint32_t child;   /* first child, or 0 */
	uint32_t sibling; /* next sibling, or 0 */
	uint32_t added;   /* index into tok->added, or TOK_NONE */
	uint8_t byte;
};

struct tok_trie {
	struct tok_trie_node *n; /* n[0] is the root */
	uint32_t len, cap;
	uint8_t first[256]; /* bytes that start some token */
};

/* A slot of the bytes -> id map: the token's bytes are strs + off. */
struct tok_vslot {
	uint32_t id, hash, off, len;
};

struct tok_pair_slot {
	uint64_t key; /* left id << 32 | right id; UINT64_MAX: empty */
	uint32_t rank, id;
};

struct tok_work;

struct tok {
	enum tok_kind_e kind;

	/* id -> bytes (decoding), every id that is a token */
	uint32_t n_ids;   /* ids are < n_ids */
	uint32_t ids_cap; /* allocated entries of id_off, id_len */
	uint32_t *id_off; /* [n_ids]: offset in strs, TOK_NONE: no token */
	uint32_t *id_len; /* [n_ids] */
	uint8_t *strs;    /* all token bytes */
	size_t strs_len, strs_cap;

	/* bytes -> id for the BPE vocabulary (not added/special tokens) */
	struct tok_vslot *slots; /* open addressing; id TOK_NONE: empty */
	uint32_t slot_mask;
	uint32_t n_vocab;

	/* Hugging Face merges: (left, right) -> (rank, merged id) */
	struct tok_pair_slot *pairs;
	uint32_t pair_mask, n_pairs;

	uint32_t byte_id[256]; /* id of each single byte, TOK_NONE if none */
	int whole_piece;       /* a piece that is a token is emitted as is (tiktoken,
	                        * Hugging Face ignore_merges) */
	uint32_t unk_id;       /* Hugging Face unk_token, TOK_NONE if none */
	int fuse_unk;

	enum tok_norm_form norms[TOK_MAX_NORMALIZERS];
	int n_norms;

	struct tok_step steps[TOK_MAX_STEPS];
	int n_steps;

	struct tok_added *added;
	uint32_t n_added;
	struct tok_trie trie_raw;  /* added tokens matched before normalization */
	struct tok_trie trie_norm; /* added tokens with normalized=true */
	int any_single_word;
	pcre2_code *word_re; /* \w, for single_word added tokens */

	_Atomic(struct tok_work *) spare[TOK_SPARE_WORK]; /* scratch kept for the next calls */
};

/* 64-bit hash of a byte string (vocabulary map, piece cache). */
uint64_t tok_hash_bytes(const uint8_t *p, size_t n);

/* Building (loaders). All return 0 or -1 with err set. */
struct tok *tok_new(enum tok_kind_e kind);
/* Sizes the id tables for ids < n_ids (<= TOK_MAX_IDS). */
int tok_set_ids(struct tok *t, uint32_t n_ids, char *err);
/* Records token bytes for id; index: also add to the bytes -> id map. */
int tok_set_token(struct tok *t, uint32_t id, const uint8_t *p, size_t n, int index, char *err);
/* Prepares the bytes -> id map for about n entries. */
void tok_vocab_reserve(struct tok *t, uint32_t n);
/* Looks bytes up in the vocabulary: id or TOK_NONE. */
uint32_t tok_vocab_find(const struct tok *t, const uint8_t *p, size_t n);
void tok_pairs_reserve(struct tok *t, uint32_t n);
/* Sets (later calls win, like Hugging Face's map) */
void tok_pair_set(struct tok *t, uint32_t a, uint32_t b, uint32_t rank, uint32_t id);
int tok_add_added(struct tok *t, uint32_t id, const uint8_t *p, size_t n, int special, int lstrip,
                  int rstrip, int single_word, int normalized, char *err);
/* Compiles a pre-tokenizer pattern (PCRE2, UTF + UCP, JIT when available;
 * \s widened to the White_Space property). literal: match the text as is. */
int tok_compile(const char *pat, size_t len, int literal, pcre2_code **out, char *err);
int tok_add_step(struct tok *t, pcre2_code *re, enum tok_behavior b, int invert, int prefix_space,
                 char *err);
/* Final checks and derived tables (byte ids, tries). */
int tok_finish(struct tok *t, char *err);

int tok_load_hf(struct tok *t, json_t *root, char *err);
int tok_load_tiktoken_json(struct tok *t, json_t *root, char *err);
int tok_load_tiktoken_file(struct tok *t, const char *data, size_t len, char *err);

/* Frees cached encoder scratch memory (tok_encode.c). */
void tok_work_free(struct tok_work *w);

#endif
