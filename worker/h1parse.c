/* h1parse.c - the bounded push parser of one HTTP/1.1 response (see
 * h1parse.h): lines gathered with memchr into a fixed buffer, the few
 * fields that frame the body read by hand, the body handed out as it
 * comes (chunked data through lib/chunked.c). */
#include "h1parse.h"

#include <string.h>
#include <strings.h>

#include "hrlimits.h"

enum { S_STATUS, S_HEADER, S_BODY, S_TRAILER, S_DONE, S_ERR };

#define MAX_LEN (1ULL << 62) /* a Content-Length at or over this is refused */

struct tramp {
	h1_body_fn fn;
	void *ud;
};

static int body_tramp(void *ud, const char *p, size_t n)
{
	struct tramp *t = ud;
	return t->fn(t->ud, p, n) ? 1 : 0;
}

static void new_response(struct h1_parser *p)
{
	p->status = 0;
	p->framing = H1_BODY_NONE;
	p->keep_alive = false;
	p->http11 = false;
	p->have_len = p->chunked = p->other_te = false;
	p->conn_close = p->conn_keep = false;
	p->len = p->left = 0;
	chunked_init(&p->dechunk);
}

void h1_init(struct h1_parser *p)
{
	new_response(p);
	p->state = S_STATUS;
	p->head_bytes = 0;
	p->line_len = 0;
	p->skip_line = false;
	p->used = 0;
}

bool h1_head_done(const struct h1_parser *p)
{
	return p->state == S_BODY || p->state == S_TRAILER || p->state == S_DONE ||
	       (p->state == S_ERR && p->status >= 200);
}

static int fail(struct h1_parser *p, int err)
{
	p->state = S_ERR;
	p->used = (size_t)-err; /* (the error, kept for later calls) */
	return err;
}

/* Gathers the bytes of a line from buf[*i..n) into p->line (the first
 * H1_LINE_MAX of them; skip_line says more came). Returns 1 when the
 * line ended (its LF consumed, a CR before it removed), 0 when the
 * buffer ended first, H1_EBIG when the head outgrew its bound. */
static int gather(struct h1_parser *p, const char *buf, size_t n, size_t *i)
{
	const char *s = buf + *i;
	size_t avail = n - *i;
	const char *lf = memchr(s, '\n', avail);
	size_t take = lf ? (size_t)(lf - s) + 1 : avail;
	if ((uint64_t)p->head_bytes + take > HR_MAX_RESPONSE_HEAD)
		return H1_EBIG;
	p->head_bytes += (uint32_t)take;
	size_t text = lf ? take - 1 : take;
	size_t room = H1_LINE_MAX - p->line_len;
	if (text > room) {
		p->skip_line = true;
		text = room;
	}
	memcpy(p->line + p->line_len, s, text);
	p->line_len += (uint32_t)text;
	*i += take;
	if (!lf)
		return 0;
	if (p->line_len > 0 && p->line[p->line_len - 1] == '\r' && !p->skip_line)
		p->line_len--;
	return 1;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "HTTP/1.x NNN[ reason]" */
static int status_line(struct h1_parser *p, const char *l, size_t n)
{
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') || l[8] != ' ' ||
	    !is_digit(l[9]) || !is_digit(l[10]) || !is_digit(l[11]) || (n > 12 && l[12] != ' '))
		return H1_EBAD;
	int code = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	if (code < 100)
		return H1_EBAD;
	p->http11 = l[7] == '1';
	p->status = code;
	return 0;
}

static bool name_is(const char *l, size_t n, const char *name)
{
	size_t k = strlen(name);
	return n == k && strncasecmp(l, name, k) == 0;
}

static bool token_is(const char *v, size_t n, const char *tok)
{
	size_t k = strlen(tok);
	return n == k && strncasecmp(v, tok, k) == 0;
}

/* Calls each comma-separated token of v[0..n) (spaces trimmed). */
static void tokens(struct h1_parser *p, const char *v, size_t n, bool te)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t a = i, b = i;
		while (i < n && v[i] != ',') {
			if (v[i] != ' ' && v[i] != '\t')
				b = i + 1;
			i++;
		}
		if (b == a)
			continue;
		if (te) {
			/* as libcurl reads it: any coding named chunked */
			if (token_is(v + a, b - a, "chunked"))
				p->chunked = true;
			else
				p->other_te = true;
		} else if (token_is(v + a, b - a, "close")) {
			p->conn_close = true;
		} else if (token_is(v + a, b - a, "keep-alive")) {
			p->conn_keep = true;
		}
	}
}

static int header_line(struct h1_parser *p, const char *l, size_t n)
{
	if (l[0] == ' ' || l[0] == '\t')
		return 0; /* obsolete line folding: a continuation, of no field we read */
	const char *colon = memchr(l, ':', n);
	if (!colon || colon == l)
		return p->skip_line ? 0 : H1_EBAD; /* (a long line's colon may lie beyond) */
	size_t nl = (size_t)(colon - l);
	const char *v = colon + 1, *end = l + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vn = (size_t)(end - v);
	bool cl = name_is(l, nl, "content-length"), te = name_is(l, nl, "transfer-encoding"),
	     co = name_is(l, nl, "connection");
	if (!cl && !te && !co)
		return 0;
	if (p->skip_line)
		return H1_EBIG; /* a field we read, too long to read */
	if (te || co) {
		tokens(p, v, vn, te);
		return 0;
	}
	if (vn == 0 || vn > 19)
		return H1_EBAD;
	uint64_t len = 0;
	for (size_t k = 0; k < vn; k++) {
		if (!is_digit(v[k]))
			return H1_EBAD;
		len = len * 10 + (uint64_t)(v[k] - '0');
	}
	if (len >= MAX_LEN || (p->have_len && len != p->len))
		return H1_EBAD;
	p->have_len = true;
	p->len = len;
	return 0;
}

/* The blank line after a header section. Returns 0, H1_DONE (no body),
 * or an error. */
static int end_of_head(struct h1_parser *p, h1_head_fn head, void *ud)
{
	if (p->status < 200) {
		if (p->status == 101)
			return H1_EBAD; /* no protocol switch was asked for */
		new_response(p); /* interim: the final response follows */
		p->state = S_STATUS;
		return 0;
	}
	if (p->status == 204 || p->status == 304)
		p->framing = H1_BODY_NONE;
	else if (p->chunked)
		p->framing = H1_BODY_CHUNKED;
	else if (p->other_te)
		p->framing = H1_BODY_CLOSE;
	else if (p->have_len)
		p->framing = p->len ? H1_BODY_LENGTH : H1_BODY_NONE;
	else
		p->framing = H1_BODY_CLOSE;
	p->left = p->len;
	p->keep_alive = p->http11 ? !p->conn_close : p->conn_keep && !p->conn_close;
	if (p->framing == H1_BODY_CLOSE || (p->chunked && p->have_len))
		p->keep_alive = false; /* (both framings given: trust neither for another answer) */
	p->state = S_BODY;
	if (head && head(ud, p->status))
		return H1_ESTOP;
	if (p->framing == H1_BODY_NONE) {
		p->state = S_DONE;
		return H1_DONE;
	}
	return 0;
}

int h1_feed(struct h1_parser *p, const char *buf, size_t n, h1_head_fn head, h1_body_fn body,
            void *ud)
{
	size_t i = 0;
	int rc;

	if (p->state == S_ERR)
		return -(int)p->used;
	if (p->state == S_DONE) {
		p->used = 0;
		return H1_DONE;
	}
	while (i < n) {
		switch (p->state) {
		case S_STATUS:
		case S_HEADER:
		case S_TRAILER:
			rc = gather(p, buf, n, &i);
			if (rc < 0)
				return fail(p, rc);
			if (rc == 0)
				return H1_MORE;
			{
				const char *l = p->line;
				size_t ln = p->line_len;
				bool long_line = p->skip_line;
				p->line_len = 0;
				if (p->state == S_STATUS) {
					if (ln == 0 && !long_line)
						break; /* an empty line before the status line */
					rc = status_line(p, l, ln);
					p->skip_line = false;
					if (rc < 0)
						return fail(p, rc);
					p->state = S_HEADER;
				} else if (p->state == S_TRAILER) {
					p->skip_line = false;
					if (ln == 0 && !long_line) {
						p->state = S_DONE;
						p->used = i;
						return H1_DONE;
					}
				} else if (ln == 0 && !long_line) {
					rc = end_of_head(p, head, ud);
					if (rc < 0)
						return fail(p, rc);
					if (rc == H1_DONE) {
						p->used = i;
						return H1_DONE;
					}
				} else {
					rc = header_line(p, l, ln);
					p->skip_line = false;
					if (rc < 0)
						return fail(p, rc);
				}
			}
			break;
		case S_BODY:
			if (p->framing == H1_BODY_CHUNKED) {
				struct tramp t = {body, ud};
				rc = chunked_feed(&p->dechunk, buf + i, n - i, body_tramp, &t);
				if (rc == CHUNKED_BAD)
					return fail(p, H1_ECHUNK);
				if (rc)
					return fail(p, H1_ESTOP);
				if (!chunked_done(&p->dechunk))
					return H1_MORE;
				i += p->dechunk.used;
				p->state = S_TRAILER;
				p->line_len = 0;
				p->skip_line = false;
				break;
			}
			size_t k = n - i;
			if (p->framing == H1_BODY_LENGTH && k > p->left)
				k = (size_t)p->left;
			if (k && body(ud, buf + i, k))
				return fail(p, H1_ESTOP);
			i += k;
			if (p->framing == H1_BODY_LENGTH) {
				p->left -= k;
				if (p->left == 0) {
					p->state = S_DONE;
					p->used = i;
					return H1_DONE;
				}
			}
			break;
		default: /* S_DONE, reached above */
			p->used = i;
			return H1_DONE;
		}
	}
	return H1_MORE;
}

int h1_eof(struct h1_parser *p)
{
	if (p->state == S_ERR)
		return -(int)p->used;
	if (p->state == S_DONE)
		return H1_DONE;
	if (p->state == S_BODY && p->framing == H1_BODY_CLOSE) {
		p->state = S_DONE;
		return H1_DONE;
	}
	return fail(p, H1_ETRUNC);
}
