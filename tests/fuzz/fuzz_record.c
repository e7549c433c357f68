/* fuzz_record.c - libFuzzer target for the record batch codec (lib/record.c).
 *
 * The input is fed to record_batch_decode. When it decodes, every field of
 * every record is checked against its documented range, the records are
 * re-encoded (record_batch_begin + record_encode) and decoded again: the
 * second decode must succeed and give identical fields and chunk arrays,
 * and re-encoding that is byte-identical to the first re-encoding (which is
 * never longer than the input: the encoder writes canonical varints). The
 * same input is also fed to record_chunks_decode (twice, the second time
 * reusing the array), and a decoded blob must survive record_chunks_encode
 * and decode unchanged. Any violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib \
 *        tests/fuzz/fuzz_record.c lib/record.c lib/dynbuf.c lib/util.c
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "fuzz.h"
#include "hrlimits.h"
#include "record.h"
#include "util.h"

#define BIG ((size_t)1 << 30)

/* The ranges record_batch_decode promises for a record it returns. */
static void check_ranges(const struct hr_record *r)
{
	REQUIRE(r->phase < HR_PHASE__COUNT);
	REQUIRE(r->error < HR_ERR__COUNT);
	REQUIRE(r->isl_src < HR_TOKSRC__COUNT);
	REQUIRE(r->osl_src < HR_TOKSRC__COUNT);
	REQUIRE(r->http_status >= 0 && r->http_status <= 999);
	REQUIRE(r->isl >= -1 && r->osl >= -1 && r->reasoning_tokens >= -1);
	REQUIRE(r->n_chunks <= HR_MAX_CHUNKS_PER_REQUEST);
	REQUIRE(r->n_chunks == 0 || r->chunk_ns != NULL);
	if (r->error_msg)
		REQUIRE(strlen(r->error_msg) <= HR_MAX_ERROR_MSG);
}

static void check_same(const struct hr_record *a, const struct hr_record *b)
{
	REQUIRE(a->seq == b->seq);
	REQUIRE(a->req_id == b->req_id);
	REQUIRE(a->worker == b->worker);
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
	REQUIRE(a->n_chunks == b->n_chunks);
	if (a->n_chunks)
		REQUIRE(memcmp(a->chunk_ns, b->chunk_ns, a->n_chunks * sizeof *a->chunk_ns) == 0);
	REQUIRE((a->error_msg == NULL) == (b->error_msg == NULL));
	if (a->error_msg)
		REQUIRE(strcmp(a->error_msg, b->error_msg) == 0);
}

static void free_records(struct hr_record *recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		record_release(&recs[i]);
	free(recs);
}

static void encode_batch(struct dynbuf *out, const struct hr_record *recs, size_t n)
{
	dynbuf_init(out, BIG);
	record_batch_begin(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		REQUIRE(record_encode(out, &recs[i]) == 0);
}

static void fuzz_batch(const uint8_t *data, size_t size)
{
	struct hr_record *recs = NULL, *again = NULL, *again2 = NULL;
	size_t n = 0, n2 = 0, n3 = 0;
	char err[HR_ERRLEN];

	err[0] = '\0';
	if (record_batch_decode(data, size, &recs, &n, err) < 0) {
		REQUIRE(recs == NULL && n == 0);
		REQUIRE(err[0] != '\0');
		return;
	}
	REQUIRE(recs != NULL);
	REQUIRE(n <= HR_MAX_RECORDS_PER_BATCH);
	for (size_t i = 0; i < n; i++)
		check_ranges(&recs[i]);

	struct dynbuf enc, enc2;
	encode_batch(&enc, recs, n);
	REQUIRE(enc.len <= size);
	if (record_batch_decode(enc.data, enc.len, &again, &n2, err) < 0) {
		fprintf(stderr, "re-decode failed: %s\n", err);
		REQUIRE(!"re-encoded batch decodes");
	}
	REQUIRE(n2 == n);
	for (size_t i = 0; i < n; i++)
		check_same(&recs[i], &again[i]);

	/* the canonical encoding is a fixed point */
	encode_batch(&enc2, again, n2);
	REQUIRE(enc2.len == enc.len && memcmp(enc2.data, enc.data, enc.len) == 0);
	REQUIRE(record_batch_decode(enc2.data, enc2.len, &again2, &n3, err) == 0);
	REQUIRE(n3 == n);
	free_records(again2, n3);

	/* any shorter prefix of a canonical batch is malformed */
	if (enc.len > 4) {
		struct hr_record *cut = NULL;
		size_t nc = 0;
		REQUIRE(record_batch_decode(enc.data, enc.len - 1, &cut, &nc, err) < 0);
		REQUIRE(cut == NULL && nc == 0);
	}

	dynbuf_release(&enc);
	dynbuf_release(&enc2);
	free_records(again, n2);
	free_records(recs, n);
}

static void fuzz_chunks(const uint8_t *data, size_t size)
{
	int64_t *arr = NULL, *arr2 = NULL;
	size_t cap = 0, cap2 = 0;
	int64_t start = 0;

	/* a start time taken from the input, so both signs and large values occur */
	if (size >= 1)
		start = (int64_t)(int8_t)data[0] * 1000003;
	long n = record_chunks_decode(data, size, start, &arr, &cap);
	REQUIRE(n >= -1);
	if (n >= 0) {
		REQUIRE((uint64_t)n <= HR_MAX_CHUNKS_PER_REQUEST);
		REQUIRE((size_t)n <= size); /* every delta takes a byte */
		REQUIRE((size_t)n <= cap);
		REQUIRE(n == 0 || arr != NULL);

		/* decoding again into the same array gives the same chunks */
		int64_t *copy = xmalloc((size_t)n * sizeof *copy + 1);
		if (n)
			memcpy(copy, arr, (size_t)n * sizeof *copy);
		REQUIRE(record_chunks_decode(data, size, start, &arr, &cap) == n);
		if (n)
			REQUIRE(memcmp(copy, arr, (size_t)n * sizeof *copy) == 0);
		free(copy);

		/* encode + decode round trip */
		struct hr_record r;
		struct dynbuf blob;
		record_init(&r);
		r.start_ns = start;
		r.n_chunks = (uint32_t)n;
		r.chunk_ns = arr;
		dynbuf_init(&blob, BIG);
		record_chunks_encode(&blob, &r);
		REQUIRE(blob.len <= size);
		REQUIRE(record_chunks_decode(blob.data, blob.len, start, &arr2, &cap2) == n);
		if (n)
			REQUIRE(memcmp(arr, arr2, (size_t)n * sizeof *arr) == 0);
		dynbuf_release(&blob);
	}
	free(arr);
	free(arr2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_batch(data, size);
	fuzz_chunks(data, size);
	return 0;
}
