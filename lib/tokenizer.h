/* tokenizer.h - byte-level BPE tokenizers in C: Hugging Face tokenizer.json
 * files (model BPE with a ByteLevel pre-tokenizer, as GPT-2, Llama 3, Qwen
 * and DeepSeek use) and tiktoken rank files (`.tiktoken`, and the npm
 * tiktoken package's JSON encoders such as cl100k_base and o200k_base).
 *
 * The ids produced are those of the reference implementations (Hugging Face
 * `tokenizers`, OpenAI `tiktoken`) for the same file; docs/tokenizer.md
 * lists the supported features, the normalization coverage, what happens to
 * invalid UTF-8, and the measured speed.
 *
 * Lifecycle: tok_load() or tok_load_mem() -> any number of tok_encode /
 * tok_count / tok_decode calls -> tok_free(). A loaded tokenizer is never
 * modified by the calls that use it (scratch memory is per call or taken from
 * an atomic slot), so one struct tok may serve several threads at once.
 *
 * Errors: int functions return 0 on success and -1 on failure, with a
 * message in err (HR_ERRLEN bytes, may be NULL). Memory exhaustion aborts
 * (util.h); sizes from the file are bounded by the TOK_MAX_* limits below
 * before anything is allocated for them, so hostile files get an error, never
 * a crash.
 */
#ifndef HR_TOKENIZER_H
#define HR_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

struct dynbuf;

/* Bounds on what a tokenizer file may contain. */
#define TOK_MAX_FILE_BYTES (256u << 20) /* a tokenizer file (Qwen3's is 11 MiB) */
#define TOK_MAX_IDS (1u << 22)          /* ids are 0 .. TOK_MAX_IDS-1 */
#define TOK_MAX_TOKEN_BYTES 4096u       /* one vocabulary entry or added token */
#define TOK_MAX_PATTERN_BYTES 65536u    /* one pre-tokenizer regular expression */
#define TOK_MAX_STEPS 8                 /* pre-tokenizer steps (Split, ByteLevel) */
#define TOK_MAX_NORMALIZERS 8           /* normalizers in a Sequence */
#define TOK_MAX_ADDED 65536u            /* added / special tokens */
/* One piece after pre-tokenization (a run of letters, digits, spaces or
 * symbols with no break): longer ones fail the encode call. */
#define TOK_MAX_PIECE_BYTES (4u << 20)

/* A growable vector of token ids, owned by the caller. Embedded struct:
 * tok_ids_init / tok_ids_release. */
struct tok_ids {
	uint32_t *v; /* owned; NULL until the first id */
	size_t len;
	size_t cap;
};

void tok_ids_init(struct tok_ids *ids);
void tok_ids_release(struct tok_ids *ids);

/* Opaque loaded tokenizer. */
struct tok;

/* Reads a tokenizer file (at most TOK_MAX_FILE_BYTES) and detects its format
 * from the content: a JSON object with "model" is a Hugging Face
 * tokenizer.json; one with "bpe_ranks" and "pat_str" is a tiktoken npm
 * encoder; anything else must be a `.tiktoken` rank file ("<base64> <rank>"
 * lines) of a known encoding (cl100k_base, o200k_base, r50k_base, p50k_base,
 * recognised by their rank count). OUT: *out, a new tokenizer the caller
 * frees with tok_free(). */
int tok_load(const char *path, struct tok **out, char *err);

/* Same from memory (data is borrowed, not kept). */
int tok_load_mem(const void *data, size_t len, struct tok **out, char *err);

/* Frees a tokenizer; tok_free(NULL) is a no-op. */
void tok_free(struct tok *tok);

/* Flags of tok_encode_ex. */
#define TOK_ENC_SPECIAL 1u /* recognise special tokens in the text */

/* Appends the ids of text[0..len) to ids (existing contents are kept).
 *
 * The text is ordinary text: special tokens spelled out in it (such as
 * "<|endoftext|>") are encoded as the characters they are made of, like
 * tiktoken's encode_ordinary() and Hugging Face's split_special_tokens=True.
 * Hugging Face added tokens that are not special (Qwen3's "<think>") are
 * always recognised, as in Hugging Face. No BOS/EOS or template tokens are
 * ever added. The text may be any bytes: invalid UTF-8 is encoded as raw
 * bytes (see docs/tokenizer.md). Returns 0, or -1 when the regular
 * expression engine gave up (its match limit, for patterns that backtrack
 * without end) or a piece is longer than TOK_MAX_PIECE_BYTES; ids may then
 * hold part of the result. */
int tok_encode(const struct tok *tok, const char *text, size_t len, struct tok_ids *ids);

/* tok_encode with flags (TOK_ENC_SPECIAL: special tokens in the text become
 * their ids, like tiktoken's encode(allowed_special="all") and Hugging
 * Face's default) and an error message. */
int tok_encode_ex(const struct tok *tok, const char *text, size_t len, unsigned flags,
                  struct tok_ids *ids, char *err);

/* Number of tokens tok_encode would produce, without storing them; -1 on
 * the errors of tok_encode. */
long long tok_count(const struct tok *tok, const char *text, size_t len);

/* Appends the bytes of the tokens ids[0..n) to out (special and added
 * tokens as their text). Returns 0, or -1 when an id is not a token or out
 * would pass its maximum (out keeps what was added before the failure). */
int tok_decode(const struct tok *tok, const uint32_t *ids, size_t n, struct dynbuf *out, char *err);

/* One more than the largest id (vocabulary, added and special tokens). */
uint32_t tok_vocab_size(const struct tok *tok);

/* "hf-bpe" or "tiktoken": what tok_load found. Static string. */
const char *tok_kind(const struct tok *tok);

/* Id of a special or added token by its exact text, or -1. */
long long tok_special_id(const struct tok *tok, const char *text);

#endif
