/* sse.c - push parser for Server-Sent Events (see sse.h).
 *
 * Hot path of the load generator: the usual event, one "data:" line and
 * an empty line with nothing pending, is dispatched directly (fast_event);
 * otherwise line ends are found with memchr (one pending position for CR
 * and one for LF, so every byte is scanned at most once per character), a
 * line that lies entirely inside the fed buffer is parsed in place, and
 * only a line cut by the end of a feed is copied into p->line. The data
 * and event buffers are reset, not freed, after each event, so a stream of
 * events allocates nothing once warmed up.
 *
 * Choices the header leaves open:
 *  - the comment callback gets the text after ':' with one leading space
 *    removed (": ping" -> "ping"), like a field value;
 *  - after a callback stops parsing, the rest of that feed is dropped and
 *    the parser is left as just after the dispatch (not spent);
 *  - sse_finish returns SSE_ERR_OVERSIZE on a spent parser (it stays
 *    spent), otherwise 0: an unterminated final line can only be a comment
 *    or a field of the event that is being discarded, so no event callback
 *    runs; it then resets the parser, which can parse a new stream
 *    (BOM included) without reallocating.
 */
#include "sse.h"

#include <stdbool.h>
#include <string.h>

/* p->state bits */
#define ST_AFTER_CR 0x01 /* the last byte fed was a CR: skip one leading LF */
#define ST_BOM_DONE 0x02 /* past the point where a BOM may appear */
#define ST_SPENT 0x04    /* a bound was exceeded */
#define ST_BOM_SHIFT 3   /* bits 3-4: BOM bytes matched so far (0..2) */
#define ST_BOM_MASK (0x3 << ST_BOM_SHIFT)

static const char bom[3] = {'\xEF', '\xBB', '\xBF'};

void sse_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn on_event,
              sse_comment_fn on_comment, void *ud)
{
	dynbuf_init(&p->line, max_line);
	dynbuf_init(&p->data, max_event);
	dynbuf_init(&p->event, max_line);
	p->on_event = on_event;
	p->on_comment = on_comment;
	p->ud = ud;
	p->state = 0;
	p->has_data = 0;
}

void sse_release(struct sse_parser *p)
{
	dynbuf_release(&p->line);
	dynbuf_release(&p->data);
	dynbuf_release(&p->event);
}

static int spend(struct sse_parser *p)
{
	p->state |= ST_SPENT;
	return SSE_ERR_OVERSIZE;
}

static int dispatch(struct sse_parser *p)
{
	int rc = 0;

	if (p->has_data && p->on_event) {
		const char *ev = p->event.len ? p->event.data : "message";
		const char *data = p->data.data ? p->data.data : "";
		rc = p->on_event(p->ud, ev, data, p->data.len);
	}
	dynbuf_reset(&p->data);
	dynbuf_reset(&p->event);
	p->has_data = 0;
	return rc;
}

/* One complete line without its terminator. */
static int process_line(struct sse_parser *p, const char *s, size_t n)
{
	const char *colon, *val;
	size_t nlen, vlen;

	if (n == 0)
		return dispatch(p);
	if (s[0] == ':') {
		if (p->on_comment) {
			val = s + 1;
			vlen = n - 1;
			if (vlen && val[0] == ' ') {
				val++;
				vlen--;
			}
			p->on_comment(p->ud, val, vlen);
		}
		return 0;
	}
	if (n >= 5 && memcmp(s, "data:", 5) == 0) /* nearly every line */
		colon = s + 4;
	else
		colon = memchr(s, ':', n);
	if (colon) {
		nlen = (size_t)(colon - s);
		val = colon + 1;
		vlen = n - nlen - 1;
		if (vlen && val[0] == ' ') {
			val++;
			vlen--;
		}
	} else {
		nlen = n;
		val = "";
		vlen = 0;
	}
	if (nlen == 4 && memcmp(s, "data", 4) == 0) {
		size_t sep = p->has_data ? 1 : 0;
		if (p->data.len > p->data.max || vlen + sep > p->data.max - p->data.len)
			return spend(p);
		if (sep)
			dynbuf_add(&p->data, "\n", 1);
		dynbuf_add(&p->data, val, vlen);
		p->has_data = 1;
	} else if (nlen == 5 && memcmp(s, "event", 5) == 0) {
		dynbuf_reset(&p->event);
		if (dynbuf_add(&p->event, val, vlen) < 0)
			return spend(p);
	}
	/* id, retry and unknown fields are ignored */
	return 0;
}

/* Consume a possible BOM at the start of the stream. Returns how many bytes
 * of buf it took, or -1 when the line bound is exceeded. */
static long skip_bom(struct sse_parser *p, const char *buf, size_t len)
{
	unsigned m = ((unsigned)p->state & ST_BOM_MASK) >> ST_BOM_SHIFT;
	size_t i = 0;

	while (i < len && m < 3) {
		if (buf[i] != bom[m]) {
			/* not a BOM: the bytes matched so far are line content */
			p->state = (p->state & ~ST_BOM_MASK) | ST_BOM_DONE;
			if (m && dynbuf_add(&p->line, bom, m) < 0)
				return -1;
			return (long)i;
		}
		m++;
		i++;
	}
	if (m == 3)
		p->state = (p->state & ~ST_BOM_MASK) | ST_BOM_DONE;
	else
		p->state = (p->state & ~ST_BOM_MASK) | (int)(m << ST_BOM_SHIFT);
	return (long)i;
}

/* The usual shape of a stream, "data: ...\n\n" at pos with nothing pending
 * (no partial line, data or event name): the event is dispatched at once,
 * with the result the line-by-line path would give. *taken is false when
 * the bytes are anything else (a CR, a bound reached, a cut line) and the
 * general path must read them. Returns the callback's verdict. */
static int fast_event(struct sse_parser *p, const char **pos, const char *end, bool *taken)
{
	const char *s = *pos;
	*taken = false;
	if (end - s < 7 || memcmp(s, "data:", 5) != 0)
		return 0;
	const char *lf = memchr(s + 5, '\n', (size_t)(end - s - 5));
	if (!lf || end - lf < 2 || lf[1] != '\n' || (size_t)(lf - s) > p->line.max ||
	    memchr(s, '\r', (size_t)(lf - s)))
		return 0;
	const char *val = s + 5;
	if (val < lf && *val == ' ')
		val++;
	size_t vlen = (size_t)(lf - val);
	if (vlen > p->data.max || dynbuf_add(&p->data, val, vlen) < 0)
		return 0; /* the general path spends the parser */
	*taken = true;
	*pos = lf + 2;
	int rc = p->on_event ? p->on_event(p->ud, "message", p->data.data, vlen) : 0;
	dynbuf_reset(&p->data);
	return rc;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t len)
{
	const char *pos, *end, *lf, *cr;

	if (p->state & ST_SPENT)
		return SSE_ERR_OVERSIZE;
	if (len == 0)
		return 0;
	pos = buf;
	end = buf + len;
	if (!(p->state & ST_BOM_DONE)) {
		long k = skip_bom(p, buf, len);
		if (k < 0)
			return spend(p);
		pos += k;
		if (pos == end)
			return 0;
	}
	if (p->state & ST_AFTER_CR) {
		p->state &= ~ST_AFTER_CR;
		if (*pos == '\n' && ++pos == end)
			return 0;
	}
	while (!p->line.len && !p->has_data && !p->event.len) {
		bool taken;
		int rc = fast_event(p, &pos, end, &taken);
		if (!taken)
			break;
		if (rc)
			return rc;
		if (pos == end)
			return 0;
	}

	lf = memchr(pos, '\n', (size_t)(end - pos));
	if (!lf)
		lf = end;
	cr = memchr(pos, '\r', (size_t)(end - pos));
	if (!cr)
		cr = end;
	while (pos < end) {
		const char *eol, *next;
		int rc;

		if (lf < pos) {
			lf = memchr(pos, '\n', (size_t)(end - pos));
			if (!lf)
				lf = end;
		}
		if (cr < pos) {
			cr = memchr(pos, '\r', (size_t)(end - pos));
			if (!cr)
				cr = end;
		}
		eol = lf < cr ? lf : cr;
		if (eol == end) {
			/* partial line: keep it for the next feed */
			if (dynbuf_add(&p->line, pos, (size_t)(end - pos)) < 0)
				return spend(p);
			return 0;
		}
		next = eol + 1;
		if (*eol == '\r') {
			if (next == end)
				p->state |= ST_AFTER_CR;
			else if (*next == '\n')
				next++;
		}
		if (p->line.len) {
			if (dynbuf_add(&p->line, pos, (size_t)(eol - pos)) < 0)
				return spend(p);
			rc = process_line(p, p->line.data, p->line.len);
			dynbuf_reset(&p->line);
		} else {
			if ((size_t)(eol - pos) > p->line.max)
				return spend(p);
			rc = process_line(p, pos, (size_t)(eol - pos));
		}
		if (rc)
			return rc;
		pos = next;
	}
	return 0;
}

int sse_finish(struct sse_parser *p)
{
	if (p->state & ST_SPENT)
		return SSE_ERR_OVERSIZE;
	/* A final unterminated line: only a comment has an effect; anything
	 * else belongs to the event that is discarded below. (A BOM prefix
	 * left pending is such a line and cannot start with ':'.) */
	if (p->line.len && p->line.data[0] == ':' && p->on_comment) {
		const char *val = p->line.data + 1;
		size_t vlen = p->line.len - 1;
		if (vlen && val[0] == ' ') {
			val++;
			vlen--;
		}
		p->on_comment(p->ud, val, vlen);
	}
	dynbuf_reset(&p->line);
	dynbuf_reset(&p->data);
	dynbuf_reset(&p->event);
	p->has_data = 0;
	p->state = 0;
	return 0;
}

static void reset_buf(struct dynbuf *b)
{
	if (b->cap > SSE_KEEP_BYTES) {
		size_t max = b->max;
		dynbuf_release(b);
		dynbuf_init(b, max);
	} else {
		dynbuf_reset(b);
	}
}

void sse_reset(struct sse_parser *p)
{
	reset_buf(&p->line);
	reset_buf(&p->data);
	reset_buf(&p->event);
	p->has_data = 0;
	p->state = 0;
}
