/* sse.h - push parser for Server-Sent Events (text/event-stream).
 *
 * Feed it bytes exactly as they arrive, split anywhere (even inside a CRLF
 * pair or a multi-byte character); it calls back once per dispatched event.
 * Implements the WHATWG parsing rules: lines end in CRLF, LF or CR; lines
 * starting with ':' are comments; "field: value" with one optional space
 * removed; several data lines join with '\n'; an empty line dispatches;
 * an event with no data lines is not dispatched; a BOM at the start is
 * skipped. `id` and `retry` are accepted and ignored.
 *
 * Bounds: a line longer than max_line, or an event whose data grows past
 * max_event, makes sse_feed return SSE_ERR_OVERSIZE; the parser is then
 * spent (every later call returns the same error) - the caller records a
 * malformed_stream error.
 *
 * Thread affinity: none; one parser per stream.
 */
#ifndef HR_SSE_H
#define HR_SSE_H

#include <stddef.h>

#include "dynbuf.h"

#define SSE_ERR_OVERSIZE (-1)

/* Called for each dispatched event. event/data are borrowed, valid only
 * during the call, NUL-terminated; event is "message" when no event field
 * was given. A nonzero return stops parsing and is returned by sse_feed;
 * the rest of that feed is dropped, so stop feeding this stream then. */
typedef int (*sse_event_fn)(void *ud, const char *event, const char *data, size_t data_len);
/* Optional: called for each comment line (keep-alives) with the text after
 * ':' minus one leading space; may be NULL. */
typedef void (*sse_comment_fn)(void *ud, const char *text, size_t len);

struct sse_parser {
	struct dynbuf line;  /* the current, incomplete line */
	struct dynbuf data;  /* data lines of the current event */
	struct dynbuf event; /* event name of the current event */
	sse_event_fn on_event;
	sse_comment_fn on_comment;
	void *ud;
	int state;     /* internal: after-CR flag, BOM position, error */
	int has_data;  /* the current event has seen a data field */
};

void sse_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn on_event,
	      sse_comment_fn on_comment, void *ud);
void sse_release(struct sse_parser *p);
/* Returns 0, SSE_ERR_OVERSIZE, or the callback's nonzero return. */
int sse_feed(struct sse_parser *p, const char *buf, size_t len);
/* End of stream. A final line without terminator is processed as a line;
 * an event not yet terminated by a blank line is discarded (as browsers do).
 * Returns 0, or SSE_ERR_OVERSIZE when the parser is spent. The parser is
 * then reset and may take a new stream without reallocating. */
int sse_finish(struct sse_parser *p);
/* Makes the parser new again for another stream (a spent one too), keeping
 * its buffers unless one grew past SSE_KEEP_BYTES (then it is freed). */
void sse_reset(struct sse_parser *p);

#define SSE_KEEP_BYTES 65536

#endif
