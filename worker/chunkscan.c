/* chunkscan.c - one-pass, allocation-free reading of a streamed chunk
 * (see chunkscan.h).
 *
 * A validator of RFC 8259 JSON that knows, at every value, which member
 * path it is on: a pushdown automaton with an explicit stack (one byte per
 * open object or array). The few paths the worker reads are P_*; the leaf
 * members it records are L_*. A member that repeats resets what was
 * recorded under it, so the last occurrence wins. Any doubt returns -1
 * (FAIL) and jansson takes over.
 *
 * The memo (a template): servers repeat every byte of a chunk but the
 * content text (id, object, created, model, the path to delta, logprobs,
 * finish_reason), so after a chunk whose content string decided what was
 * read (nothing after it reset the content), its bytes before and after
 * that string's text are kept with the facts read. A chunk with the same
 * bytes before and after a different text is the same JSON but for one
 * string: only that text is scanned (a valid string body that ends exactly
 * where the kept bytes resume), and the facts are the kept ones with the
 * new text. Anything else is scanned in full.
 *
 * TGI events (endpoint SPEC_EP_TGI) are read by the same automaton with
 * their own root members: "token" (an object: a chunk; its "text" and
 * "special"), "generated_text" (a string: the last event) and "details"
 * ("generated_tokens", "input_length"); the memo never applies to them
 * (every event differs in its index, id and logprob as well).
 */
#include "chunkscan.h"

#include <string.h>

#include "spec.h"

#define MAX_DEPTH 32
#define MAX_INT_DIGITS 18 /* fits int64_t: jansson cannot call it too big */
#define MAX_MANTISSA 40   /* digits of a real, and ... */
#define MAX_EXPONENT 200  /* ... its exponent: never overflows a double */
#define FAIL (-1)

enum path {
	P_OTHER,
	P_ROOT,
	P_CHOICES,
	P_CHOICE0,
	P_DELTA,
	P_USAGE,
	P_DETAILS,
	P_TOKEN,   /* TGI: the root's "token" */
	P_TDETAILS /* TGI: the root's "details" */
};
enum leaf {
	L_NONE,
	L_CONTENT,
	L_RCONTENT,
	L_REASONING,
	L_PROMPT,
	L_COMPLETION,
	L_RTOKENS,
	L_ERROR,
	L_TTEXT,   /* TGI: token.text (from here on: leaves that note strings) */
	L_GENTEXT, /* TGI: generated_text */
	L_SPECIAL  /* TGI: token.special */
};

/* What the automaton does next. */
enum state {
	ST_VALUE, /* a value on path vpath, leaf vleaf */
	ST_FIRST, /* just after '{': '}' or the first member */
	ST_KEY,   /* after ',' in an object: a member */
	ST_AFTER, /* after a value: ',' or the end of its container */
};

/* A stack entry: an open object or array and the path it is on. */
#define F_OBJ 1
#define F_PATH_SHIFT 1

/* The facts recorded so far. */
struct facts {
	bool content, rcontent, reasoning;
	bool has_text;             /* the content string's raw bytes: */
	uint32_t text_off, text_len; /* offset from the event's start, length */
	int64_t prompt, completion, rtokens;
	/* TGI: token is an object, its text a string (text_off/len), special
	 * true, generated_text a string */
	bool token, ttext, special, final;
};

struct sc {
	const unsigned char *base, *p, *end;
	bool chat;
	bool tgi; /* TGI events: the root's members are TGI's */
	struct facts f;
	int depth;
	unsigned char stack[MAX_DEPTH];
	/* content generations: bumped whenever the content facts change; the
	 * text's generation is the one its string set */
	unsigned gen, text_gen;
};

static void ws_skip(struct sc *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

/* White space; compact JSON has none, so one test usually decides. */
static inline void ws(struct sc *s)
{
	if (s->p < s->end && *s->p <= ' ')
		ws_skip(s);
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

static uint64_t load64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The high bit of every byte of v that is not plain (below 0x20, '"',
 * '\\', or from 0x80 up), and maybe of bytes above such a byte (a borrow
 * of the subtractions): the lowest one set is always exact. A plain byte
 * (0x20-0x7f) minus 0x20, or xor '"' or '\\' minus one, stays below 0x80
 * and borrows nothing; a byte below 0x20 minus 0x20, or a zero after the
 * xor minus one, wraps to 0x80 or more. */
static uint64_t not_plain(uint64_t v)
{
	uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');
	return ((v - ONES * 0x20) | (q - ONES) | (b - ONES) | v) & HIGHS;
}

/* The rest of a string after its opening quote. *len: raw bytes between
 * the quotes (non-zero exactly when the decoded string is non-empty).
 * Plain bytes are skipped eight at a time. */
static int string(struct sc *s, size_t *len, bool *escaped)
{
	const unsigned char *p = s->p, *end = s->end, *start = p;
	*escaped = false;
	for (;;) {
		while (end - p >= 8) {
			uint64_t m = not_plain(load64(p));
			if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				p += (unsigned)__builtin_ctzll(m) >> 3; /* the first one */
#endif
				break;
			}
			p += 8;
		}
		while (p < end && plain[*p])
			p++;
		if (p == end)
			return FAIL;
		unsigned c = *p;
		if (c == '"') {
			*len = (size_t)(p - start);
			s->p = p + 1;
			return 0;
		}
		if (c == '\\') {
			*escaped = true;
			s->p = p;
			if (escape(s) < 0)
				return FAIL;
			p = s->p;
		} else if (c < 0x20) {
			return FAIL;
		} else {
			int n = utf8_len(p, end);
			if (!n)
				return FAIL;
			p += n;
		}
	}
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
		s->f.content = nonempty;
		s->f.has_text = false;
		s->gen++;
		break;
	case L_RCONTENT:
		s->f.rcontent = nonempty;
		break;
	case L_REASONING:
		s->f.reasoning = nonempty;
		break;
	case L_PROMPT:
		s->f.prompt = count;
		break;
	case L_COMPLETION:
		s->f.completion = count;
		break;
	case L_RTOKENS:
		s->f.rtokens = count;
		break;
	case L_SPECIAL:
		s->f.special = nonempty; /* (the literal true) */
		break;
	case L_TTEXT:
		s->f.ttext = false; /* a string sets it again */
		break;
	case L_GENTEXT:
		s->f.final = false;
		break;
	default:
		break;
	}
}

/* A string at a TGI leaf, from its raw bytes. */
static void tgi_string(struct sc *s, int leaf, const unsigned char *start, size_t n)
{
	switch (leaf) {
	case L_GENTEXT:
		s->f.final = true;
		break;
	case L_SPECIAL:
		s->f.special = false; /* "true", the string, is not true */
		break;
	default: /* L_TTEXT */
		s->f.ttext = true;
		s->f.text_off = (uint32_t)(start - s->base);
		s->f.text_len = (uint32_t)n;
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

/* A member of a TGI event's root. */
static void member_tgi(struct sc *s, const unsigned char *k, size_t n, int *cpath, int *cleaf)
{
	if (KEY("token")) {
		*cpath = P_TOKEN; /* an object sets token when it opens */
		s->f.token = s->f.ttext = s->f.special = false;
	} else if (KEY("generated_text")) {
		*cleaf = L_GENTEXT;
	} else if (KEY("details")) {
		*cpath = P_TDETAILS;
		s->f.prompt = s->f.completion = -1;
	} else if (KEY("error")) {
		*cleaf = L_ERROR;
	}
}

/* Where member k of an object on path leads; resets what it replaces. */
static void member(struct sc *s, int path, const unsigned char *k, size_t n, int *cpath, int *cleaf)
{
	*cpath = P_OTHER;
	*cleaf = L_NONE;
	switch (path) {
	case P_ROOT:
		if (s->tgi) {
			member_tgi(s, k, n, cpath, cleaf);
		} else if (KEY("choices")) {
			*cpath = P_CHOICES;
			s->f.content = s->f.rcontent = s->f.reasoning = false;
			s->gen++;
		} else if (KEY("usage")) {
			*cpath = P_USAGE;
			s->f.prompt = s->f.completion = s->f.rtokens = -1;
		} else if (KEY("error")) {
			*cleaf = L_ERROR;
		}
		break;
	case P_CHOICE0:
		if (!s->chat) {
			*cleaf = content_key(s, k, n);
		} else if (KEY("delta")) {
			*cpath = P_DELTA;
			s->f.content = s->f.rcontent = s->f.reasoning = false;
			s->gen++;
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
			s->f.rtokens = -1;
		}
		break;
	case P_DETAILS:
		if (KEY("reasoning_tokens"))
			*cleaf = L_RTOKENS;
		break;
	case P_TOKEN:
		if (KEY("text"))
			*cleaf = L_TTEXT;
		else if (KEY("special"))
			*cleaf = L_SPECIAL;
		break;
	case P_TDETAILS:
		if (KEY("generated_tokens"))
			*cleaf = L_COMPLETION;
		else if (KEY("input_length"))
			*cleaf = L_PROMPT;
		break;
	default:
		break;
	}
}

/* A scalar value at s->p (not a container). */
static int scalar(struct sc *s, int leaf)
{
	switch (*s->p) {
	case '"': {
		size_t n;
		bool esc;
		const unsigned char *start = ++s->p;
		if (leaf == L_ERROR || string(s, &n, &esc) < 0)
			return FAIL;
		set_leaf(s, leaf, n > 0, -1);
		if (leaf == L_CONTENT) {
			s->f.has_text = true;
			s->f.text_off = (uint32_t)(start - s->base);
			s->f.text_len = (uint32_t)n;
			s->text_gen = s->gen;
		} else if (leaf >= L_TTEXT) {
			tgi_string(s, leaf, start, n);
		}
		return 0;
	}
	case 't':
		set_leaf(s, leaf, leaf == L_SPECIAL, -1);
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

/* Runs the automaton from state st (with vpath/vleaf for ST_VALUE) until
 * the outermost container closes. */
static int run(struct sc *s, int st, int vpath, int vleaf)
{
	for (;;) {
		switch (st) {
		case ST_VALUE: {
			ws(s);
			if (s->p >= s->end)
				return FAIL;
			unsigned c = *s->p;
			if (c != '{' && c != '[') {
				if (scalar(s, vleaf) < 0)
					return FAIL;
				st = ST_AFTER;
				break;
			}
			if (vleaf == L_ERROR || s->depth == MAX_DEPTH)
				return FAIL;
			set_leaf(s, vleaf, false, -1);
			s->p++;
			if (c == '{') {
				if (vpath == P_TOKEN)
					s->f.token = true; /* TGI: a token object, a chunk */
				s->stack[s->depth++] = (unsigned char)(vpath << F_PATH_SHIFT | F_OBJ);
				st = ST_FIRST;
				break;
			}
			s->stack[s->depth++] = (unsigned char)(vpath << F_PATH_SHIFT);
			ws(s);
			if (s->p < s->end && *s->p == ']') {
				s->p++;
				s->depth--;
				st = ST_AFTER;
				break;
			}
			/* the first element: choices[0] is read */
			vpath = vpath == P_CHOICES ? P_CHOICE0 : P_OTHER;
			vleaf = L_NONE;
			break; /* st stays ST_VALUE */
		}
		case ST_FIRST:
			ws(s);
			if (s->p < s->end && *s->p == '}') {
				s->p++;
				s->depth--;
				st = ST_AFTER;
				break;
			}
			/* fall through */
		case ST_KEY: {
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
			member(s, s->stack[s->depth - 1] >> F_PATH_SHIFT, k, n, &vpath, &vleaf);
			st = ST_VALUE;
			break;
		}
		default: { /* ST_AFTER */
			if (s->depth == 0)
				return 0;
			ws(s);
			if (s->p >= s->end)
				return FAIL;
			unsigned top = s->stack[s->depth - 1];
			unsigned c = *s->p++;
			if (c == (top & F_OBJ ? '}' : ']')) {
				s->depth--;
				break; /* st stays ST_AFTER */
			}
			if (c != ',')
				return FAIL;
			if (top & F_OBJ) {
				st = ST_KEY;
			} else {
				vpath = P_OTHER; /* a later element */
				vleaf = L_NONE;
				st = ST_VALUE;
			}
			break;
		}
		}
	}
}

void chunkscan_memo_reset(struct chunkscan_memo *m)
{
	m->pre_len = 0;
}

/* A TGI event, in full (no memo). */
static int chunkscan_tgi(const char *text, size_t len, struct chunk_info *out)
{
	struct sc s = {
	    .base = (const unsigned char *)text,
	    .p = (const unsigned char *)text,
	    .end = (const unsigned char *)text + len,
	    .tgi = true,
	    .f = {.prompt = -1, .completion = -1, .rtokens = -1},
	};
	if (len > UINT32_MAX)
		return FAIL;
	ws(&s);
	if (s.p >= s.end || *s.p != '{' || run(&s, ST_VALUE, P_ROOT, L_NONE) < 0)
		return FAIL;
	ws(&s);
	if (s.p != s.end)
		return FAIL;
	const struct facts *f = &s.f;
	bool keep = f->token && f->ttext && !f->special;
	out->content = f->token;
	out->text = keep ? text + f->text_off : NULL;
	out->text_len = keep ? f->text_len : 0;
	out->reasoning = false;
	out->prompt_tokens = f->prompt;
	out->completion_tokens = f->completion;
	out->reasoning_tokens = -1;
	out->final = f->final;
	return 0;
}

static void fill(struct chunk_info *out, const char *text, bool content, size_t text_off,
                 size_t text_len, bool rcontent, bool reasoning, int64_t prompt,
                 int64_t completion, int64_t rtokens)
{
	out->content = content;
	out->text = content ? text + text_off : NULL;
	out->text_len = content ? text_len : 0;
	out->reasoning = !content && (rcontent || reasoning);
	out->prompt_tokens = prompt;
	out->completion_tokens = completion;
	out->reasoning_tokens = rtokens;
	out->final = false;
}

/* The memo's template applied to text: 0 with *out filled, or -1. */
static int from_template(const struct chunkscan_memo *m, const char *text, size_t len, bool chat,
                         struct chunk_info *out)
{
	size_t pre = m->pre_len, suf = m->suf_len;
	if (!pre || m->chat != chat || len < pre + suf ||
	    memcmp(text, m->bytes, pre) != 0 ||
	    memcmp(text + len - suf, m->bytes + pre, suf) != 0)
		return -1;
	/* the new text: a string body whose closing quote is the first byte
	 * of the kept suffix */
	struct sc s = {
	    .base = (const unsigned char *)text,
	    .p = (const unsigned char *)text + pre,
	    .end = (const unsigned char *)text + len - suf + 1,
	};
	size_t n;
	bool esc;
	if (string(&s, &n, &esc) < 0 || s.p != s.end)
		return -1;
	fill(out, text, n > 0, pre, n, m->flags & 1, m->flags & 2, m->prompt, m->completion,
	     m->rtokens);
	return 0;
}

/* Keeps text as the template when its content string decided the content. */
static void remember(const struct sc *s, struct chunkscan_memo *m)
{
	const struct facts *f = &s->f;
	if (!f->has_text || s->gen != s->text_gen)
		return;
	size_t len = (size_t)(s->end - s->base);
	size_t pre = f->text_off, suf = len - pre - f->text_len;
	if (pre + suf > CHUNKSCAN_MEMO_BYTES)
		return;
	m->pre_len = (uint16_t)pre;
	m->suf_len = (uint16_t)suf;
	memcpy(m->bytes, s->base, pre);
	memcpy(m->bytes + pre, s->base + len - suf, suf);
	m->chat = s->chat;
	m->flags = (uint8_t)(f->rcontent | f->reasoning << 1);
	m->prompt = f->prompt;
	m->completion = f->completion;
	m->rtokens = f->rtokens;
}

int chunkscan(const char *text, size_t len, int endpoint, struct chunk_info *out,
              struct chunkscan_memo *memo)
{
	bool chat = endpoint == SPEC_EP_CHAT;
	if (endpoint == SPEC_EP_TGI)
		return chunkscan_tgi(text, len, out);
	if (memo && from_template(memo, text, len, chat, out) == 0)
		return 0;
	struct sc s = {
	    .base = (const unsigned char *)text,
	    .p = (const unsigned char *)text,
	    .end = (const unsigned char *)text + len,
	    .chat = chat,
	    .f = {.prompt = -1, .completion = -1, .rtokens = -1},
	};
	if (len > UINT32_MAX)
		return FAIL; /* offsets are 32-bit; the SSE bound is far below */
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return FAIL;
	if (run(&s, ST_VALUE, P_ROOT, L_NONE) < 0)
		return FAIL;
	ws(&s);
	if (s.p != s.end)
		return FAIL;
	if (memo)
		remember(&s, memo);
	const struct facts *f = &s.f;
	/* content is only ever true after a non-empty string, which set the text */
	fill(out, text, f->content, f->text_off, f->text_len, f->rcontent, f->reasoning, f->prompt,
	     f->completion, f->rtokens);
	return 0;
}
