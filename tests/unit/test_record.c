/* test_record.c - the record batch codec: round trips and hostile input. */
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "record.h"
#include "tap.h"
#include "util.h"

static void fill(struct hr_record *r, int i)
{
	record_init(r);
	r->seq = (uint64_t)i;
	r->req_id = 1000000000000ULL + (uint64_t)i;
	r->worker = 3;
	r->flags = HR_REC_STREAMED;
	r->http_status = i % 2 ? 200 : 503;
	r->error = i % 2 ? HR_ERR_NONE : HR_ERR_HTTP_5XX;
	r->intended_ns = 5;
	r->start_ns = 10 + i;
	r->headers_ns = 20 + i;
	r->isl = 128;
	r->osl = i;
	r->osl_src = HR_TOKSRC_USAGE;
	r->req_osl = 64;
	r->usage_osl = i;
	r->tok_osl = i % 3 ? i + 1 : -1;
	r->usage_isl = i % 2 ? 130 : -1;
	r->tok_isl = INT32_MAX;
	if (i % 4 == 1) { /* a multimodal request's counts */
		r->images_in = 2;
		r->audio_in = 0;
		r->media_bytes_in = 123456 + i;
		r->bytes_out = 9000 + i;
	}
	if (i % 4 == 2)
		r->images_out = i;
	uint32_t cap = 0;
	for (int k = 0; k < i; k++)
		record_add_chunk(r, r->start_ns + 1000 * (k + 1), &cap);
	r->end_ns = i ? r->chunk_ns[i - 1] : HR_NO_TIME;
	r->done_ns = r->start_ns + 1000000;
	if (!(i % 2))
		r->error_msg = xstrdup("upstream \"busy\"");
}

static void test_roundtrip(void)
{
	struct dynbuf b;
	dynbuf_init(&b, 1 << 20);
	enum { N = 50 };
	struct hr_record in[N];
	record_batch_begin(&b, N);
	for (int i = 0; i < N; i++) {
		fill(&in[i], i);
		record_encode(&b, &in[i]);
	}
	struct hr_record *out;
	size_t n;
	char err[HR_ERRLEN];
	CHECK_EQ_INT(record_batch_decode(b.data, b.len, &out, &n, err), 0);
	CHECK_EQ_INT(n, N);
	for (int i = 0; i < N && (size_t)i < n; i++) {
		CHECK_EQ_INT(out[i].seq, in[i].seq);
		CHECK_EQ_INT(out[i].req_id, in[i].req_id);
		CHECK_EQ_INT(out[i].http_status, in[i].http_status);
		CHECK_EQ_INT(out[i].error, in[i].error);
		CHECK_EQ_INT(out[i].start_ns, in[i].start_ns);
		CHECK_EQ_INT(out[i].end_ns, in[i].end_ns);
		CHECK_EQ_INT(out[i].first_output_ns, HR_NO_TIME);
		CHECK_EQ_INT(out[i].osl, in[i].osl);
		CHECK_EQ_INT(out[i].reasoning_tokens, -1);
		CHECK_EQ_INT(out[i].req_osl, 64);
		CHECK_EQ_INT(out[i].usage_osl, in[i].usage_osl);
		CHECK_EQ_INT(out[i].tok_osl, in[i].tok_osl);
		CHECK_EQ_INT(out[i].usage_isl, in[i].usage_isl);
		CHECK_EQ_INT(out[i].tok_isl, INT32_MAX);
		CHECK_EQ_INT(out[i].images_in, in[i].images_in);
		CHECK_EQ_INT(out[i].audio_in, in[i].audio_in);
		CHECK_EQ_INT(out[i].media_bytes_in, in[i].media_bytes_in);
		CHECK_EQ_INT(out[i].images_out, in[i].images_out);
		CHECK_EQ_INT(out[i].bytes_out, in[i].bytes_out);
		CHECK_EQ_INT(out[i].n_chunks, in[i].n_chunks);
		if (in[i].n_chunks)
			CHECK_MEM(out[i].chunk_ns, out[i].n_chunks * sizeof(int64_t), in[i].chunk_ns,
				  in[i].n_chunks * sizeof(int64_t));
		if (in[i].error_msg)
			CHECK_STR(out[i].error_msg, in[i].error_msg);
		else
			CHECK(out[i].error_msg == NULL);
		record_release(&out[i]);
	}
	free(out);

	/* every truncation of a valid batch is rejected cleanly */
	int rejected = 0;
	for (size_t cut = 0; cut < b.len; cut++)
		if (record_batch_decode(b.data, cut, &out, &n, err) < 0)
			rejected++;
		else {
			for (size_t k = 0; k < n; k++)
				record_release(&out[k]);
			free(out);
		}
	CHECK_EQ_INT(rejected, b.len);

	/* the chunk blob alone round-trips too */
	struct dynbuf blob;
	dynbuf_init(&blob, 1 << 20);
	record_chunks_encode(&blob, &in[7]);
	int64_t *arr = NULL;
	size_t cap = 0;
	CHECK_EQ_INT(record_chunks_decode(blob.data, blob.len, in[7].start_ns, &arr, &cap), 7);
	CHECK_EQ_INT(arr[6], in[7].chunk_ns[6]);
	CHECK_EQ_INT(record_chunks_decode(blob.data, blob.len - 1, 0, &arr, &cap), -1);
	free(arr);
	dynbuf_release(&blob);
	for (int i = 0; i < N; i++)
		record_release(&in[i]);
	dynbuf_release(&b);
}

static void test_hostile(void)
{
	struct hr_record *out;
	size_t n;
	char err[HR_ERRLEN];
	/* bad magic, bad version, huge count, chunk count bomb */
	CHECK_EQ_INT(record_batch_decode("XXXX\x01", 5, &out, &n, err), -1);
	CHECK_EQ_INT(record_batch_decode("HRB\x01\x00", 5, &out, &n, err), -1); /* version 1 */
	CHECK_EQ_INT(record_batch_decode("HRB\x04\x00", 5, &out, &n, err), -1);
	CHECK_EQ_INT(record_batch_decode("HRB\x02\xff\xff\xff\xff\x0f", 9, &out, &n, err), -1);
	const unsigned char bomb[] = {'H', 'R', 'B', 2, 1, /* one record */
				      0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, /* small fields */
				      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    /* times, counts */
				      0, 0, 0, 0, 0,                   /* further counts */
				      0xff, 0xff, 0xff, 0x7f};	     /* chunk count */
	CHECK_EQ_INT(record_batch_decode(bomb, sizeof bomb, &out, &n, err), -1);
	/* random garbage never crashes and never succeeds with trailing junk */
	unsigned int seed = 1;
	unsigned char buf[256];
	int rejected = 0;
	for (int t = 0; t < 20000; t++) {
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)rand_r(&seed);
		if (len >= 4)
			memcpy(buf, "HRB\x02", 4);
		if (record_batch_decode(buf, len, &out, &n, err) == 0) {
			for (size_t k = 0; k < n; k++)
				record_release(&out[k]);
			free(out);
		} else {
			rejected++;
		}
	}
	/* garbage is overwhelmingly rejected; what decodes was freed above (ASan) */
	CHECK(rejected > 19000);
}

int main(void)
{
	test_roundtrip();
	test_hostile();
	return tap_done();
}
