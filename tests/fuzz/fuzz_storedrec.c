/* fuzz_storedrec.c - libFuzzer target for the stored record codec
 * (lib/reccodec.c: the data blob of a records row).
 *
 * The input is a stored blob fed to rec_unpack. When it decodes: the
 * counts are -1 or non-negative, n_chunks is within its bound, an
 * error_msg is NUL-terminated text; the record is re-encoded with
 * rec_pack (within rec_bound) and decoded again, which must succeed with
 * every field, chunk and message equal; re-encoding that gives the same
 * bytes (the canonical encoding is a fixed point); and the canonical blob
 * cut by one byte, or with a byte added, is refused. Decoding reuses one
 * rec_mem throughout, as the record cursor does. Any violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib \
 *        tests/fuzz/fuzz_storedrec.c lib/reccodec.c lib/util.c
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "reccodec.h"
#include "record.h"
#include "util.h"

static void check_decoded(const struct hr_record *r)
{
	const int32_t c[10] = {r->req_osl,        r->usage_isl, r->usage_osl, r->tok_isl,
	                       r->tok_osl,        r->images_in, r->audio_in,  r->media_bytes_in,
	                       r->images_out,     r->bytes_out};
	for (int i = 0; i < 10; i++)
		REQUIRE(c[i] >= -1);
	REQUIRE(r->n_chunks <= HR_MAX_CHUNKS_PER_REQUEST);
	REQUIRE(r->n_chunks == 0 || r->chunk_ns != NULL);
}

static void check_same(const struct hr_record *a, const struct hr_record *b)
{
	REQUIRE(a->req_id == b->req_id);
	REQUIRE(a->session == b->session);
	REQUIRE(a->turn == b->turn);
	REQUIRE(a->phase == b->phase);
	REQUIRE(a->error == b->error);
	REQUIRE(a->isl_src == b->isl_src);
	REQUIRE(a->osl_src == b->osl_src);
	REQUIRE(a->flags == b->flags);
	REQUIRE(a->http_status == b->http_status);
	REQUIRE(a->intended_ns == b->intended_ns);
	REQUIRE(a->start_ns == b->start_ns);
	REQUIRE(a->headers_ns == b->headers_ns);
	REQUIRE(a->first_output_ns == b->first_output_ns);
	REQUIRE(a->end_ns == b->end_ns);
	REQUIRE(a->done_ns == b->done_ns);
	REQUIRE(a->isl == b->isl);
	REQUIRE(a->osl == b->osl);
	REQUIRE(a->reasoning_tokens == b->reasoning_tokens);
	REQUIRE(a->req_osl == b->req_osl);
	REQUIRE(a->usage_isl == b->usage_isl);
	REQUIRE(a->usage_osl == b->usage_osl);
	REQUIRE(a->tok_isl == b->tok_isl);
	REQUIRE(a->tok_osl == b->tok_osl);
	REQUIRE(a->images_in == b->images_in);
	REQUIRE(a->audio_in == b->audio_in);
	REQUIRE(a->media_bytes_in == b->media_bytes_in);
	REQUIRE(a->images_out == b->images_out);
	REQUIRE(a->bytes_out == b->bytes_out);
	REQUIRE(a->n_chunks == b->n_chunks);
	if (a->n_chunks)
		REQUIRE(memcmp(a->chunk_ns, b->chunk_ns, a->n_chunks * sizeof *a->chunk_ns) == 0);
	REQUIRE((a->error_msg == NULL) == (b->error_msg == NULL));
	if (a->error_msg)
		REQUIRE(strcmp(a->error_msg, b->error_msg) == 0);
}

/* A copy of r whose chunks and message are its own (rec_unpack's point
 * into the rec_mem, which the next decode overwrites). */
static void copy_record(struct hr_record *dst, const struct hr_record *r)
{
	*dst = *r;
	dst->chunk_ns = xmalloc((r->n_chunks ? r->n_chunks : 1) * sizeof *dst->chunk_ns);
	if (r->n_chunks)
		memcpy(dst->chunk_ns, r->chunk_ns, r->n_chunks * sizeof *dst->chunk_ns);
	dst->error_msg = r->error_msg ? xstrdup(r->error_msg) : NULL;
}

static unsigned char *encode(const struct hr_record *r, size_t *len)
{
	size_t ml = r->error_msg ? strlen(r->error_msg) : 0;
	size_t bound = rec_bound(r, ml);
	/* exactly the bound, so that writing past it is caught */
	unsigned char *buf = xmalloc(bound);
	*len = (size_t)(rec_pack(buf, r, ml) - buf);
	REQUIRE(*len <= bound);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rec_mem mem; /* reused across inputs, as a cursor does */
	struct hr_record r;

	/* a private copy of exactly size bytes, so overreads are caught */
	unsigned char *in = xmalloc(size ? size : 1);
	if (size)
		memcpy(in, data, size);
	record_init(&r);
	if (rec_unpack(in, size, &r, &mem) < 0) {
		free(in);
		return 0;
	}
	check_decoded(&r);
	if (r.error_msg)
		REQUIRE(strlen(r.error_msg) < size);
	struct hr_record first;
	copy_record(&first, &r);

	/* encode, decode: the same record */
	size_t len;
	unsigned char *enc = encode(&first, &len);
	REQUIRE(len >= 1 && enc[0] == REC_FORMAT);
	struct hr_record again;
	record_init(&again);
	REQUIRE(rec_unpack(enc, len, &again, &mem) == 0);
	check_same(&first, &again);

	/* the canonical encoding is a fixed point */
	size_t len2;
	unsigned char *enc2 = encode(&again, &len2);
	REQUIRE(len2 == len && memcmp(enc, enc2, len) == 0);

	/* one byte short, or one byte more, is malformed */
	struct hr_record bad;
	record_init(&bad);
	REQUIRE(rec_unpack(enc, len - 1, &bad, &mem) < 0);
	unsigned char *longer = xmalloc(len + 1);
	memcpy(longer, enc, len);
	longer[len] = size ? data[0] : 0;
	REQUIRE(rec_unpack(longer, len + 1, &bad, &mem) < 0);

	free(longer);
	free(enc2);
	free(enc);
	free(first.chunk_ns);
	free(first.error_msg);
	free(in);
	return 0;
}
