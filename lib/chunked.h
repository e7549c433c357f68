/* chunked.h - push decoder of the HTTP/1.1 chunked transfer coding.
 *
 * The worker asks libcurl for the raw response body
 * (CURLOPT_HTTP_TRANSFER_DECODING off): libcurl then calls the write
 * callback once per read from the socket instead of once per chunk, and
 * still follows the chunk framing itself to find the end of the response.
 * This decoder takes those raw bytes, split anywhere, and hands out each
 * piece of chunk data in place (no copy).
 *
 * It accepts at least what libcurl 7.88 accepts, which stays the judge of
 * the framing (a body libcurl rejects fails the transfer with its own
 * error): a size line is 1 to 16 hex digits followed by anything up to LF
 * (chunk extensions, CR); chunk data is followed by any number of CRs and
 * an LF. The last chunk (size 0) ends the body: trailer fields and
 * whatever follows are ignored. Anything else is a framing error.
 *
 * Thread affinity: none; one decoder per response.
 */
#ifndef HR_CHUNKED_H
#define HR_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNKED_BAD (-1) /* framing error: the decoder is spent */

/* Called for each piece of chunk data, in order; p is borrowed (it points
 * into the buffer given to chunked_feed). A nonzero return stops decoding
 * and is returned by chunked_feed; the rest of that feed is dropped, so
 * stop feeding this response then. */
typedef int (*chunked_data_fn)(void *ud, const char *p, size_t n);

struct chunked {
	int state;     /* internal */
	int digits;    /* hex digits of the current size line */
	uint64_t left; /* bytes of the current chunk's data still to come */
	size_t used;   /* bytes of the last chunked_feed up to the end of the last chunk's
	                * size line (all of them when the body did not end there) */
};

void chunked_init(struct chunked *c);
/* Decodes len raw bytes. Returns 0 (also once the body has ended: later
 * bytes are ignored), CHUNKED_BAD on a framing error (and on every call
 * after it), or the callback's nonzero return. */
int chunked_feed(struct chunked *c, const char *buf, size_t len, chunked_data_fn fn, void *ud);
/* The last chunk has been seen. */
bool chunked_done(const struct chunked *c);

#endif
