/* tok_unicode.h - the Unicode pieces the tokenizer needs: strict UTF-8
 * decoding (no overlongs, surrogates or values past U+10FFFF), the
 * White_Space property, and NFC/NFD normalization from tables generated out
 * of the Unicode Character Database (lib/tok_nfc_data.h, see
 * lib/tok_nfc_gen.sh). Private to the tokenizer modules.
 */
#ifndef HR_TOK_UNICODE_H
#define HR_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte or code point buffer (scratch memory, reused). */
struct tok_bytes {
	uint8_t *p;
	size_t len, cap;
};
struct tok_cps {
	uint32_t *cp;
	uint8_t *ccc;
	size_t len, cap;
};

void tok_bytes_reserve(struct tok_bytes *b, size_t extra);
void tok_bytes_add(struct tok_bytes *b, const void *p, size_t n);
void tok_bytes_release(struct tok_bytes *b);
void tok_cps_release(struct tok_cps *c);

/* Decodes one valid UTF-8 character at s[0..n): returns its length (1..4)
 * and sets *cp, or returns 0 when s does not start with a valid sequence. */
size_t tok_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);

/* Length of the valid UTF-8 prefix of s[0..n). */
size_t tok_utf8_valid_len(const uint8_t *s, size_t n);

/* Length (>= 1 when n > 0) of the run of bytes at s that start no valid
 * UTF-8 sequence, i.e. up to the next position where one starts. */
size_t tok_utf8_invalid_len(const uint8_t *s, size_t n);

/* Appends the UTF-8 form of cp (a valid scalar value) to out; returns the
 * number of bytes (1..4). out must have room for 4. */
size_t tok_utf8_put(uint8_t *out, uint32_t cp);

/* The Unicode White_Space property (Rust's char::is_whitespace). */
int tok_is_white_space(uint32_t cp);

enum tok_norm_form { TOK_NORM_NFC = 1, TOK_NORM_NFD = 2 };

/* Normalizes valid UTF-8 s[0..n) to form. Returns 0 when the text is
 * already normalized (out untouched), 1 when out (reset first) holds the
 * normalized text. cps is scratch. */
int tok_normalize(enum tok_norm_form form, const uint8_t *s, size_t n, struct tok_bytes *out,
                  struct tok_cps *cps);

/* The Unicode version of the normalization tables. */
const char *tok_unicode_version(void);

#endif
