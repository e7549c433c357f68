/* genreq.c - a quick reader of the usual chat and text completion request
 * bodies, so that headroom-mock does not build a jansson tree for every
 * request of a benchmark (that tree was a quarter of the mock's CPU at
 * 64 output tokens).
 *
 * It reads one pass over the bytes and gives the same gen_req as
 * route_openai.c's jansson reading, or gives up: the caller then reads
 * the body with jansson, which gives the answer or the error message. So it only
 * has to be right when it succeeds, and it gives up on anything it does
 * not need to handle: a backslash or a byte outside printable ASCII in any
 * string (escapes, UTF-8), an exponent or an integer of more than 18
 * digits, nesting deeper than MAX_DEPTH, a member it reads given twice in
 * one object (jansson keeps the last), a value of a type route_openai.c
 * refuses or that is out of range, anything that is not JSON. Within what it
 * accepts, the strings are their own bytes, so the prompt's tokens are
 * counted from the body in place. tests/fuzz/fuzz_mockreq.c holds it to
 * jansson's reading.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mock.h"

#define MAX_DEPTH 32
#define DEFAULT_MAX_TOKENS 16

struct rd {
	const char *p, *end;
};

enum vt { V_NULL, V_TRUE, V_FALSE, V_INT, V_REAL, V_STR, V_OBJ, V_ARR };

struct val {
	enum vt t;
	const char *s; /* V_STR: its bytes */
	size_t n;
	long long i; /* V_INT */
};

static void ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

static bool peek(const struct rd *r, char ch)
{
	return r->p < r->end && *r->p == ch;
}

/* A string of printable ASCII without escapes, at r->p (a quote). */
static bool read_str(struct rd *r, const char **s, size_t *n)
{
	if (!peek(r, '"'))
		return false;
	const char *q = ++r->p;
	const char *e = memchr(q, '"', (size_t)(r->end - q));
	if (!e)
		return false;
	for (const char *x = q; x < e; x++) {
		unsigned char ch = (unsigned char)*x;
		if (ch < 0x20 || ch >= 0x7f || ch == '\\')
			return false;
	}
	*s = q;
	*n = (size_t)(e - q);
	r->p = e + 1;
	return true;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* -?(0|[1-9][0-9]*) of at most 18 digits (an integer), or with a fraction
 * and no exponent (a real, whose integer part keeps it finite). */
static bool read_num(struct rd *r, struct val *v)
{
	bool neg = peek(r, '-');
	if (neg)
		r->p++;
	const char *d = r->p;
	if (!peek(r, '0') && !(r->p < r->end && *r->p >= '1' && *r->p <= '9'))
		return false;
	if (*r->p == '0')
		r->p++;
	else
		while (r->p < r->end && is_digit(*r->p))
			r->p++;
	size_t digits = (size_t)(r->p - d);
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E' || is_digit(*r->p)))
		return false;
	if (peek(r, '.')) {
		r->p++;
		if (!(r->p < r->end && is_digit(*r->p)) || digits > 300)
			return false;
		while (r->p < r->end && is_digit(*r->p))
			r->p++;
		if (r->p < r->end && (*r->p == 'e' || *r->p == 'E'))
			return false;
		v->t = V_REAL;
		return true;
	}
	if (digits > 18)
		return false;
	long long x = 0;
	for (const char *c = d; c < d + digits; c++)
		x = x * 10 + (*c - '0');
	v->t = V_INT;
	v->i = neg ? -x : x;
	return true;
}

static bool read_lit(struct rd *r, const char *lit, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0)
		return false;
	r->p += n;
	return true;
}

/* A scalar; an object or array is only recognised (v->t), not read. */
static bool read_scalar(struct rd *r, struct val *v)
{
	if (r->p >= r->end)
		return false;
	switch (*r->p) {
	case '"':
		v->t = V_STR;
		return read_str(r, &v->s, &v->n);
	case 't':
		v->t = V_TRUE;
		return read_lit(r, "true", 4);
	case 'f':
		v->t = V_FALSE;
		return read_lit(r, "false", 5);
	case 'n':
		v->t = V_NULL;
		return read_lit(r, "null", 4);
	case '{':
		v->t = V_OBJ;
		return true;
	case '[':
		v->t = V_ARR;
		return true;
	default:
		return read_num(r, v);
	}
}

/* Members of an object or elements of an array at r->p, each handed to fn
 * (positioned at its value, which fn must consume). */
typedef bool (*member_fn)(struct rd *r, const char *k, size_t kn, void *ctx, int depth);
typedef bool (*elem_fn)(struct rd *r, void *ctx, int depth);

static bool read_object(struct rd *r, int depth, member_fn fn, void *ctx)
{
	if (!peek(r, '{') || depth > MAX_DEPTH)
		return false;
	r->p++;
	ws(r);
	if (peek(r, '}')) {
		r->p++;
		return true;
	}
	for (;;) {
		const char *k;
		size_t kn;
		if (!read_str(r, &k, &kn))
			return false;
		ws(r);
		if (!peek(r, ':'))
			return false;
		r->p++;
		ws(r);
		if (!fn(r, k, kn, ctx, depth + 1))
			return false;
		ws(r);
		if (peek(r, ',')) {
			r->p++;
			ws(r);
			continue;
		}
		if (!peek(r, '}'))
			return false;
		r->p++;
		return true;
	}
}

static bool read_array(struct rd *r, int depth, elem_fn fn, void *ctx)
{
	if (!peek(r, '[') || depth > MAX_DEPTH)
		return false;
	r->p++;
	ws(r);
	if (peek(r, ']')) {
		r->p++;
		return true;
	}
	for (;;) {
		if (!fn(r, ctx, depth + 1))
			return false;
		ws(r);
		if (peek(r, ',')) {
			r->p++;
			ws(r);
			continue;
		}
		if (!peek(r, ']'))
			return false;
		r->p++;
		return true;
	}
}

static bool skip_value(struct rd *r, int depth);

static bool skip_member(struct rd *r, const char *k, size_t kn, void *ctx, int depth)
{
	(void)k;
	(void)kn;
	(void)ctx;
	return skip_value(r, depth);
}

static bool skip_elem(struct rd *r, void *ctx, int depth)
{
	(void)ctx;
	return skip_value(r, depth);
}

static bool skip_value(struct rd *r, int depth)
{
	struct val v;
	if (!read_scalar(r, &v))
		return false;
	if (v.t == V_OBJ)
		return read_object(r, depth, skip_member, NULL);
	if (v.t == V_ARR)
		return read_array(r, depth, skip_elem, NULL);
	return true;
}

static bool key_is(const char *k, size_t kn, const char *name)
{
	size_t n = strlen(name);
	return kn == n && memcmp(k, name, n) == 0;
}

/* A member read once: false (give up) when it is there twice. */
static bool first(unsigned *seen, unsigned bit)
{
	if (*seen & bit)
		return false;
	*seen |= bit;
	return true;
}

/* ---- the body ---- */

enum {
	K_MODEL = 1u << 0,
	K_STREAM = 1u << 1,
	K_OPTIONS = 1u << 2,
	K_MCT = 1u << 3,
	K_MAX = 1u << 4,
	K_IGNORE = 1u << 5,
	K_MIN = 1u << 6,
	K_PROMPT = 1u << 7, /* messages or prompt */
};

struct body {
	bool chat;
	unsigned seen;
	struct val mct, max, min;
	bool stream, include_usage, ignore_eos;
	uint64_t words;
	unsigned messages;
};

static bool opt_bool(struct rd *r, bool *out)
{
	struct val v;
	if (!read_scalar(r, &v))
		return false;
	if (v.t == V_TRUE || v.t == V_FALSE)
		*out = v.t == V_TRUE;
	return v.t == V_TRUE || v.t == V_FALSE || v.t == V_NULL;
}

static bool opt_int(struct rd *r, struct val *v)
{
	return read_scalar(r, v) && (v->t == V_INT || v->t == V_NULL);
}

static bool options_member(struct rd *r, const char *k, size_t kn, void *ctx, int depth)
{
	struct body *b = ((void **)ctx)[0];
	unsigned *seen = ((void **)ctx)[1];
	if (key_is(k, kn, "include_usage"))
		return first(seen, 1) && opt_bool(r, &b->include_usage);
	return skip_value(r, depth);
}

/* A content part: {"type": "text", "text": "..."} counts. */
struct part {
	unsigned seen;
	const char *type, *text;
	size_t type_len, text_len;
	bool text_is_str;
};

static bool part_member(struct rd *r, const char *k, size_t kn, void *ctx, int depth)
{
	struct part *p = ctx;
	if (key_is(k, kn, "type"))
		return first(&p->seen, 1) && read_str(r, &p->type, &p->type_len);
	if (key_is(k, kn, "text")) {
		if (!first(&p->seen, 2))
			return false;
		if (peek(r, '"'))
			return p->text_is_str = read_str(r, &p->text, &p->text_len);
		return skip_value(r, depth);
	}
	return skip_value(r, depth);
}

static bool part_elem(struct rd *r, void *ctx, int depth)
{
	struct body *b = ctx;
	struct part p = {0};
	if (!read_object(r, depth, part_member, &p) || !(p.seen & 1))
		return false;
	if (p.type_len == 4 && memcmp(p.type, "text", 4) == 0) {
		if (!p.text_is_str)
			return false;
		b->words += api_text_tokens(p.text, p.text_len);
	}
	return true;
}

struct message {
	struct body *b;
	unsigned seen;
};

static bool message_member(struct rd *r, const char *k, size_t kn, void *ctx, int depth)
{
	struct message *m = ctx;
	if (key_is(k, kn, "role")) {
		const char *s;
		size_t n;
		return first(&m->seen, 1) && read_str(r, &s, &n);
	}
	if (key_is(k, kn, "content")) {
		if (!first(&m->seen, 2))
			return false;
		struct val v;
		if (!read_scalar(r, &v))
			return false;
		if (v.t == V_STR)
			m->b->words += api_text_tokens(v.s, v.n);
		else if (v.t == V_ARR)
			return read_array(r, depth, part_elem, m->b);
		return v.t == V_STR || v.t == V_NULL;
	}
	return skip_value(r, depth);
}

static bool message_elem(struct rd *r, void *ctx, int depth)
{
	struct message m = {ctx, 0};
	if (!read_object(r, depth, message_member, &m) || !(m.seen & 1))
		return false;
	m.b->messages++;
	return true;
}

static bool ids_elem(struct rd *r, void *ctx, int depth)
{
	(void)depth;
	struct val v;
	if (!read_scalar(r, &v) || v.t != V_INT)
		return false;
	((struct body *)ctx)->words++;
	return true;
}

static bool prompt_elem(struct rd *r, void *ctx, int depth)
{
	struct body *b = ctx;
	struct val v;
	if (!read_scalar(r, &v))
		return false;
	if (v.t == V_STR)
		b->words += api_text_tokens(v.s, v.n);
	else if (v.t == V_INT)
		b->words++;
	else if (v.t == V_ARR)
		return read_array(r, depth, ids_elem, b);
	return v.t == V_STR || v.t == V_INT;
}

static bool root_member(struct rd *r, const char *k, size_t kn, void *ctx, int depth)
{
	struct body *b = ctx;
	if (key_is(k, kn, "model")) {
		const char *s;
		size_t n;
		return first(&b->seen, K_MODEL) && read_str(r, &s, &n);
	}
	if (key_is(k, kn, "stream"))
		return first(&b->seen, K_STREAM) && opt_bool(r, &b->stream);
	if (key_is(k, kn, "stream_options")) {
		if (!first(&b->seen, K_OPTIONS))
			return false;
		if (peek(r, '{')) {
			unsigned seen = 0;
			void *c[2] = {b, &seen};
			return read_object(r, depth, options_member, c);
		}
		return read_lit(r, "null", 4);
	}
	if (key_is(k, kn, "max_completion_tokens"))
		return first(&b->seen, K_MCT) && opt_int(r, &b->mct);
	if (key_is(k, kn, "max_tokens"))
		return first(&b->seen, K_MAX) && opt_int(r, &b->max);
	if (key_is(k, kn, "ignore_eos"))
		return first(&b->seen, K_IGNORE) && opt_bool(r, &b->ignore_eos);
	if (key_is(k, kn, "min_tokens"))
		return first(&b->seen, K_MIN) && opt_int(r, &b->min);
	if (b->chat && key_is(k, kn, "messages")) {
		if (!first(&b->seen, K_PROMPT) || !read_array(r, depth, message_elem, b))
			return false;
		return b->messages > 0;
	}
	if (!b->chat && key_is(k, kn, "prompt")) {
		if (!first(&b->seen, K_PROMPT))
			return false;
		struct val v;
		if (peek(r, '['))
			return read_array(r, depth, prompt_elem, b);
		if (!read_scalar(r, &v) || v.t != V_STR)
			return false;
		b->words += api_text_tokens(v.s, v.n);
		return true;
	}
	return skip_value(r, depth);
}

bool gen_parse_fast(const char *body, size_t len, bool chat, struct gen_req *g)
{
	struct rd r = {body, body + len};
	struct body b;
	memset(&b, 0, sizeof(b));
	b.chat = chat;
	b.mct.t = b.max.t = b.min.t = V_NULL;
	ws(&r);
	if (!read_object(&r, 1, root_member, &b))
		return false;
	ws(&r);
	if (r.p != r.end || !(b.seen & K_PROMPT))
		return false;
	/* max_completion_tokens when given and not null, else max_tokens */
	const struct val *mt = b.mct.t != V_NULL ? &b.mct : &b.max;
	if (mt->t == V_INT && (mt->i < 0 || mt->i > HR_MAX_OSL))
		return false;
	if (b.min.t == V_INT && b.min.i < 0)
		return false;
	if (b.words > UINT32_MAX)
		return false;
	memset(g, 0, sizeof(*g));
	g->stream = b.stream;
	g->include_usage = b.include_usage;
	g->max_tokens = mt->t == V_INT ? (uint32_t)mt->i : DEFAULT_MAX_TOKENS;
	g->ignore_eos = b.ignore_eos;
	if (b.min.t == V_INT)
		g->min_tokens = b.min.i > HR_MAX_OSL ? HR_MAX_OSL + 1 : (uint32_t)b.min.i;
	g->prompt_tokens = (uint32_t)b.words;
	return true;
}
