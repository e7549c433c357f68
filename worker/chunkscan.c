/* chunkscan.c - one-pass, allocation-free reading of a streamed chunk
 * (see chunkscan.h).
 *
 * A recursive-descent validator of RFC 8259 JSON that knows, at every
 * value, which member path it is on. The few paths the worker reads are
 * states (P_*); the leaf members it records are L_*. A member that repeats
 * resets what was recorded under it, so the last occurrence wins. Any
 * doubt returns -1 (FAIL) and jansson takes over.
 */
#include "chunkscan.h"

#include <string.h>

#include "spec.h"

#define MAX_DEPTH 32
#define MAX_INT_DIGITS 18 /* fits int64_t: jansson cannot call it too big */
#define MAX_MANTISSA 40   /* digits of a real, and ... */
#define MAX_EXPONENT 200  /* ... its exponent: never overflows a double */
#define FAIL (-1)

enum path { P_OTHER, P_ROOT, P_CHOICES, P_CHOICE0, P_DELTA, P_USAGE, P_DETAILS };
enum leaf {
	L_NONE,
	L_CONTENT,
	L_RCONTENT,
	L_REASONING,
	L_PROMPT,
	L_COMPLETION,
	L_RTOKENS,
	L_ERROR
};

struct sc {
	const unsigned char *p, *end;
	bool chat;
	bool content, rcontent, reasoning;
	const unsigned char *text; /* the content string's raw bytes */
	size_t text_len;
	int64_t prompt, completion, rtokens;
};

static int value(struct sc *s, int path, int leaf, int depth);

static void ws(struct sc *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

static int hexval(unsigned c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	return -1;
}

/* \uXXXX at p (the backslash); returns the code unit or -1. */
static long hex4(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* An escape at s->p (the backslash), as jansson accepts it. */
static int escape(struct sc *s)
{
	if (s->end - s->p < 2)
		return FAIL;
	switch (s->p[1]) {
	case '"':
	case '\\':
	case '/':
	case 'b':
	case 'f':
	case 'n':
	case 'r':
	case 't':
		s->p += 2;
		return 0;
	case 'u': {
		long u = hex4(s->p, s->end);
		if (u <= 0) /* \u0000 needs JSON_ALLOW_NUL */
			return FAIL;
		s->p += 6;
		if (u >= 0xDC00 && u <= 0xDFFF)
			return FAIL; /* lone low surrogate */
		if (u >= 0xD800 && u <= 0xDBFF) {
			long lo = hex4(s->p, s->end);
			if (lo < 0xDC00 || lo > 0xDFFF)
				return FAIL;
			s->p += 6;
		}
		return 0;
	}
	default:
		return FAIL;
	}
}

/* Length of the valid UTF-8 sequence at p, or 0 (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF). */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	unsigned lo = 0x80, hi = 0xBF;
	int n;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		n = 2;
	} else if (c < 0xF0) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c < 0xF5) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (end - p < n || p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return n;
}

/* Bytes that stand for themselves inside a string: printable ASCII but
 * the quote and the backslash. */
/* clang-format off */
static const unsigned char plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
/* clang-format on */

/* The rest of a string after its opening quote. *len: raw bytes between
 * the quotes (non-zero exactly when the decoded string is non-empty). */
static int string(struct sc *s, size_t *len, bool *escaped)
{
	const unsigned char *start = s->p;
	*escaped = false;
	while (s->p < s->end) {
		while (s->p < s->end && plain[*s->p])
			s->p++;
		if (s->p == s->end)
			break;
		unsigned c = *s->p;
		if (c == '"') {
			*len = (size_t)(s->p - start);
			s->p++;
			return 0;
		}
		if (c == '\\') {
			*escaped = true;
			if (escape(s) < 0)
				return FAIL;
		} else if (c < 0x20) {
			return FAIL;
		} else if (c < 0x80) {
			s->p++;
		} else {
			int n = utf8_len(s->p, s->end);
			if (!n)
				return FAIL;
			s->p += n;
		}
	}
	return FAIL;
}

static bool isdig(const unsigned char *p, const unsigned char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* A number; *is_int when it has neither fraction nor exponent, then *iv is
 * its value. Fails (for jansson to judge) when jansson might reject it. */
static int number(struct sc *s, bool *is_int, int64_t *iv)
{
	const unsigned char *q = s->p, *end = s->end;
	bool neg = false;
	int64_t v = 0;
	int ndig = 0, mant = 0;

	if (*q == '-') {
		neg = true;
		q++;
	}
	if (!isdig(q, end))
		return FAIL;
	if (*q == '0') {
		q++;
		ndig = 1;
	} else {
		while (isdig(q, end)) {
			if (++ndig <= MAX_INT_DIGITS)
				v = v * 10 + (*q - '0');
			q++;
		}
	}
	mant = ndig;
	*is_int = true;
	if (q < end && *q == '.') {
		*is_int = false;
		q++;
		if (!isdig(q, end))
			return FAIL;
		while (isdig(q, end)) {
			mant++;
			q++;
		}
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		*is_int = false;
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		if (!isdig(q, end))
			return FAIL;
		int e = 0;
		while (isdig(q, end)) {
			if (e <= MAX_EXPONENT)
				e = e * 10 + (*q - '0');
			q++;
		}
		if (e > MAX_EXPONENT)
			return FAIL;
	}
	if (mant > MAX_MANTISSA || (*is_int && ndig > MAX_INT_DIGITS))
		return FAIL;
	*iv = neg ? -v : v;
	s->p = q;
	return 0;
}

static int literal(struct sc *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return FAIL;
	s->p += n;
	return 0;
}

/* Records the value of a leaf member: nonempty for strings, count for
 * integers (-1 when the value is anything else). */
static void set_leaf(struct sc *s, int leaf, bool nonempty, int64_t count)
{
	switch (leaf) {
	case L_CONTENT:
		s->content = nonempty;
		s->text = NULL;
		break;
	case L_RCONTENT:
		s->rcontent = nonempty;
		break;
	case L_REASONING:
		s->reasoning = nonempty;
		break;
	case L_PROMPT:
		s->prompt = count;
		break;
	case L_COMPLETION:
		s->completion = count;
		break;
	case L_RTOKENS:
		s->rtokens = count;
		break;
	default:
		break;
	}
}

#define KEY(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, n) == 0)

static int content_key(const struct sc *s, const unsigned char *k, size_t n)
{
	if (s->chat ? KEY("content") : KEY("text"))
		return L_CONTENT;
	if (KEY("reasoning_content"))
		return L_RCONTENT;
	if (KEY("reasoning"))
		return L_REASONING;
	return L_NONE;
}

/* Where member k of an object on path leads; resets what it replaces. */
static void member(struct sc *s, int path, const unsigned char *k, size_t n, int *cpath, int *cleaf)
{
	*cpath = P_OTHER;
	*cleaf = L_NONE;
	switch (path) {
	case P_ROOT:
		if (KEY("choices")) {
			*cpath = P_CHOICES;
			s->content = s->rcontent = s->reasoning = false;
		} else if (KEY("usage")) {
			*cpath = P_USAGE;
			s->prompt = s->completion = s->rtokens = -1;
		} else if (KEY("error")) {
			*cleaf = L_ERROR;
		}
		break;
	case P_CHOICE0:
		if (!s->chat) {
			*cleaf = content_key(s, k, n);
		} else if (KEY("delta")) {
			*cpath = P_DELTA;
			s->content = s->rcontent = s->reasoning = false;
		}
		break;
	case P_DELTA:
		*cleaf = content_key(s, k, n);
		break;
	case P_USAGE:
		if (KEY("prompt_tokens")) {
			*cleaf = L_PROMPT;
		} else if (KEY("completion_tokens")) {
			*cleaf = L_COMPLETION;
		} else if (KEY("completion_tokens_details")) {
			*cpath = P_DETAILS;
			s->rtokens = -1;
		}
		break;
	case P_DETAILS:
		if (KEY("reasoning_tokens"))
			*cleaf = L_RTOKENS;
		break;
	default:
		break;
	}
}

static int object(struct sc *s, int path, int depth)
{
	if (depth > MAX_DEPTH)
		return FAIL;
	s->p++; /* '{' */
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return 0;
	}
	for (;;) {
		ws(s);
		if (s->p >= s->end || *s->p != '"')
			return FAIL;
		s->p++;
		const unsigned char *k = s->p;
		size_t n;
		bool esc;
		if (string(s, &n, &esc) < 0 || esc)
			return FAIL; /* an escaped key might spell one we read */
		ws(s);
		if (s->p >= s->end || *s->p != ':')
			return FAIL;
		s->p++;
		int cpath, cleaf;
		member(s, path, k, n, &cpath, &cleaf);
		if (value(s, cpath, cleaf, depth) < 0)
			return FAIL;
		ws(s);
		if (s->p >= s->end)
			return FAIL;
		if (*s->p == '}') {
			s->p++;
			return 0;
		}
		if (*s->p++ != ',')
			return FAIL;
	}
}

static int array(struct sc *s, int path, int depth)
{
	if (depth > MAX_DEPTH)
		return FAIL;
	s->p++; /* '[' */
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	for (int i = 0;; i++) {
		int cpath = path == P_CHOICES && i == 0 ? P_CHOICE0 : P_OTHER;
		if (value(s, cpath, L_NONE, depth) < 0)
			return FAIL;
		ws(s);
		if (s->p >= s->end)
			return FAIL;
		if (*s->p == ']') {
			s->p++;
			return 0;
		}
		if (*s->p++ != ',')
			return FAIL;
	}
}

static int value(struct sc *s, int path, int leaf, int depth)
{
	ws(s);
	if (s->p >= s->end)
		return FAIL;
	switch (*s->p) {
	case '{':
		if (leaf == L_ERROR)
			return FAIL;
		set_leaf(s, leaf, false, -1);
		return object(s, path, depth + 1);
	case '[':
		if (leaf == L_ERROR)
			return FAIL;
		set_leaf(s, leaf, false, -1);
		return array(s, path, depth + 1);
	case '"': {
		size_t n;
		bool esc;
		const unsigned char *start = ++s->p;
		if (leaf == L_ERROR || string(s, &n, &esc) < 0)
			return FAIL;
		set_leaf(s, leaf, n > 0, -1);
		if (leaf == L_CONTENT) {
			s->text = start;
			s->text_len = n;
		}
		return 0;
	}
	case 't':
		set_leaf(s, leaf, false, -1);
		return leaf == L_ERROR ? FAIL : literal(s, "true", 4);
	case 'f':
		set_leaf(s, leaf, false, -1);
		return leaf == L_ERROR ? FAIL : literal(s, "false", 5);
	case 'n':
		set_leaf(s, leaf, false, -1);
		return literal(s, "null", 4); /* "error": null is no error */
	default: {
		bool is_int;
		int64_t v;
		if (leaf == L_ERROR || (*s->p != '-' && (*s->p < '0' || *s->p > '9')) ||
		    number(s, &is_int, &v) < 0)
			return FAIL;
		set_leaf(s, leaf, false, is_int && v >= 0 && v <= INT32_MAX ? v : -1);
		return 0;
	}
	}
}

int chunkscan(const char *text, size_t len, int endpoint, struct chunk_info *out)
{
	struct sc s = {
	    .p = (const unsigned char *)text,
	    .end = (const unsigned char *)text + len,
	    .chat = endpoint == SPEC_EP_CHAT,
	    .prompt = -1,
	    .completion = -1,
	    .rtokens = -1,
	};
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return FAIL;
	if (object(&s, P_ROOT, 1) < 0)
		return FAIL;
	ws(&s);
	if (s.p != s.end)
		return FAIL;
	out->content = s.content;
	out->text = s.content && s.text ? (const char *)s.text : NULL;
	out->text_len = out->text ? s.text_len : 0;
	out->reasoning = !s.content && (s.rcontent || s.reasoning);
	out->prompt_tokens = s.prompt;
	out->completion_tokens = s.completion;
	out->reasoning_tokens = s.rtokens;
	return 0;
}
