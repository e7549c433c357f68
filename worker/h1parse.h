/* h1parse.h - the bounded push parser of one HTTP/1.1 response, for the
 * worker's native transport (h1.c).
 *
 * Bytes are fed as they come off the socket, split anywhere. The parser
 * reads the status line and the header fields (no sscanf: a small state
 * machine over lines), skips interim 1xx responses, decides how the body
 * is framed (Content-Length, chunked, or until the connection closes;
 * none for 204 and 304) and hands the body out decoded: the data of a
 * chunked body through lib/chunked.c, in place, without a copy.
 *
 * Bounds: the header sections of one response (interim ones included)
 * are at most HR_MAX_RESPONSE_HEAD bytes; a status line, Content-Length,
 * Transfer-Encoding or Connection line longer than H1_LINE_MAX is refused
 * (other long lines are skipped). Nothing is allocated.
 *
 * Accepted: "HTTP/1.0" and "HTTP/1.1" status lines with a three-digit code
 * and an optional reason; LF or CRLF line ends; empty lines before a
 * status line; obsolete folded lines (ignored). Refused: any other
 * version, 101 Switching Protocols, a Content-Length that is not a
 * decimal number below 2^62 or that disagrees with an earlier one, a
 * header line without a colon, a chunked framing error, trailers over
 * the head bound.
 *
 * Keep-alive: an HTTP/1.1 response keeps the connection unless it says
 * `Connection: close`; an HTTP/1.0 one only with `Connection: keep-alive`
 * and a framed body; a close-delimited body never keeps it.
 *
 * Thread affinity: none; one parser per response.
 */
#ifndef HR_WORKER_H1PARSE_H
#define HR_WORKER_H1PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunked.h"

#define H1_LINE_MAX 1024 /* bytes kept of one header line */

/* h1_feed / h1_eof results */
#define H1_MORE 0      /* the response goes on */
#define H1_DONE 1      /* the response is complete (p->used bytes of the feed were its) */
#define H1_EBAD (-1)   /* malformed status line or header field */
#define H1_EBIG (-2)   /* header section over its bound */
#define H1_ECHUNK (-3) /* chunked framing error */
#define H1_ESTOP (-4)  /* a callback answered nonzero */
#define H1_ETRUNC (-5) /* h1_eof: the connection closed before the response ended */

enum h1_framing { H1_BODY_NONE, H1_BODY_LENGTH, H1_BODY_CHUNKED, H1_BODY_CLOSE };

/* Called once, at the end of the final (non-1xx) response's header
 * section; nonzero stops the parser (H1_ESTOP). */
typedef int (*h1_head_fn)(void *ud, int status);
/* Called for each piece of body data (decoded, non-empty, in place);
 * nonzero stops the parser (H1_ESTOP). */
typedef int (*h1_body_fn)(void *ud, const char *p, size_t n);

struct h1_parser {
	int state;
	int status;       /* of the response being read; the final one from the head call on */
	int framing;      /* enum h1_framing, once the head is read */
	bool keep_alive;  /* the connection may carry another request after this response */
	bool http11;      /* the status line said HTTP/1.1 */
	bool have_len;    /* a Content-Length was given */
	bool chunked;     /* Transfer-Encoding names chunked */
	bool other_te;    /* Transfer-Encoding names something else only */
	bool conn_close;  /* Connection: close */
	bool conn_keep;   /* Connection: keep-alive */
	bool skip_line;   /* the current line is over H1_LINE_MAX and of no interest */
	uint64_t len;     /* Content-Length */
	uint64_t left;    /* body bytes still to come (H1_BODY_LENGTH) */
	uint32_t head_bytes; /* bytes of header sections so far */
	uint32_t line_len;   /* bytes kept of the current line */
	size_t used;         /* H1_DONE: bytes of the last feed that belonged to the response */
	struct chunked dechunk;
	char line[H1_LINE_MAX];
};

void h1_init(struct h1_parser *p);
/* Parses n bytes. Returns H1_MORE, H1_DONE (later bytes are not this
 * response's: p->used says where it ended; feeding more answers H1_DONE
 * with used 0), or an error (the parser is spent: every later call
 * answers the same error). */
int h1_feed(struct h1_parser *p, const char *buf, size_t n, h1_head_fn head, h1_body_fn body,
            void *ud);
/* The connection closed: H1_DONE when that ends the response (a
 * close-delimited body, or one already complete), else H1_ETRUNC (or the
 * earlier error). */
int h1_eof(struct h1_parser *p);
/* Whether the final response's head has been read. */
bool h1_head_done(const struct h1_parser *p);

#endif
