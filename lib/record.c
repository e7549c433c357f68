/* record.c - per-request record helpers and the varint batch codec. */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "util.h"

static const char *const err_names[HR_ERR__COUNT] = {
	[HR_ERR_NONE] = "",
	[HR_ERR_CONNECT] = "connect",
	[HR_ERR_TIMEOUT] = "timeout",
	[HR_ERR_RESET] = "reset",
	[HR_ERR_HTTP_4XX] = "http_4xx",
	[HR_ERR_HTTP_5XX] = "http_5xx",
	[HR_ERR_HTTP_OTHER] = "http_other",
	[HR_ERR_MALFORMED_STREAM] = "malformed_stream",
	[HR_ERR_NO_CONTENT] = "no_content",
	[HR_ERR_CANCELLED] = "cancelled",
	[HR_ERR_TRANSPORT] = "transport",
	[HR_ERR_RATE_LIMITED] = "rate_limited",
};

static const char *const toksrc_names[HR_TOKSRC__COUNT] = {
	[HR_TOKSRC_NONE] = "none",		[HR_TOKSRC_USAGE] = "server_usage",
	[HR_TOKSRC_CHUNKS] = "chunks",		[HR_TOKSRC_REQUESTED] = "requested",
	[HR_TOKSRC_TOKENIZER] = "tokenizer",
};

const char *hr_err_name(int err)
{
	return err >= 0 && err < HR_ERR__COUNT ? err_names[err] : "?";
}

int hr_err_from_name(const char *name)
{
	for (int i = 0; i < HR_ERR__COUNT; i++)
		if (strcmp(err_names[i], name) == 0)
			return i;
	return -1;
}

const char *hr_toksrc_name(int src)
{
	return src >= 0 && src < HR_TOKSRC__COUNT ? toksrc_names[src] : "?";
}

const char *hr_phase_name(int phase)
{
	return phase == HR_PHASE_WARMUP ? "warmup" : "profiling";
}

void record_init(struct hr_record *r)
{
	memset(r, 0, sizeof *r);
	r->phase = HR_PHASE_PROFILING;
	r->intended_ns = r->start_ns = r->headers_ns = r->first_output_ns = HR_NO_TIME;
	r->end_ns = r->done_ns = HR_NO_TIME;
	r->isl = r->osl = r->reasoning_tokens = -1;
	r->req_osl = r->usage_isl = r->usage_osl = r->tok_isl = r->tok_osl = -1;
	r->images_in = r->audio_in = r->media_bytes_in = r->images_out = r->bytes_out = -1;
}

void record_release(struct hr_record *r)
{
	free(r->chunk_ns);
	free(r->error_msg);
	r->chunk_ns = NULL;
	r->error_msg = NULL;
	r->n_chunks = 0;
}

int record_add_chunk(struct hr_record *r, int64_t t_ns, uint32_t *cap)
{
	if (r->n_chunks >= HR_MAX_CHUNKS_PER_REQUEST)
		return -1;
	if (r->n_chunks == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		if (*cap > HR_MAX_CHUNKS_PER_REQUEST)
			*cap = HR_MAX_CHUNKS_PER_REQUEST;
		r->chunk_ns = xrealloc(r->chunk_ns, *cap * sizeof *r->chunk_ns);
	}
	r->chunk_ns[r->n_chunks++] = t_ns;
	return 0;
}

/* --- varints ------------------------------------------------------------ */

static void put_u(struct dynbuf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	do {
		unsigned char c = v & 0x7f;
		v >>= 7;
		tmp[n++] = c | (v ? 0x80 : 0);
	} while (v);
	if (dynbuf_add(b, tmp, n) < 0)
		xalloc_die(); /* callers size batches far below the buffer bound */
}

static void put_s(struct dynbuf *b, int64_t v)
{
	put_u(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

struct rd {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t get_u(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = 1;
			return 0;
		}
		unsigned char c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t get_s(struct rd *r)
{
	uint64_t u = get_u(r);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Reads an unsigned value that must fit below limit. */
static uint64_t get_bounded(struct rd *r, uint64_t limit)
{
	uint64_t v = get_u(r);
	if (v > limit)
		r->bad = 1;
	return r->bad ? 0 : v;
}

/* --- batches -------------------------------------------------------------- */

void record_batch_begin(struct dynbuf *out, uint32_t count)
{
	dynbuf_reset(out);
	if (dynbuf_add(out, "HRB\x03", 4) < 0)
		xalloc_die();
	put_u(out, count);
}

int record_encode(struct dynbuf *out, const struct hr_record *r)
{
	put_u(out, r->seq);
	put_u(out, r->req_id);
	put_u(out, r->worker);
	put_u(out, r->session);
	put_u(out, r->turn);
	put_u(out, r->phase);
	put_u(out, r->error);
	put_u(out, r->isl_src);
	put_u(out, r->osl_src);
	put_u(out, r->flags);
	put_s(out, r->http_status);
	put_s(out, r->intended_ns);
	put_s(out, r->start_ns);
	put_s(out, r->headers_ns);
	put_s(out, r->first_output_ns);
	put_s(out, r->end_ns);
	put_s(out, r->done_ns);
	put_s(out, r->isl);
	put_s(out, r->osl);
	put_s(out, r->reasoning_tokens);
	put_s(out, r->req_osl);
	put_s(out, r->usage_isl);
	put_s(out, r->usage_osl);
	put_s(out, r->tok_isl);
	put_s(out, r->tok_osl);
	put_s(out, r->images_in);
	put_s(out, r->audio_in);
	put_s(out, r->media_bytes_in);
	put_s(out, r->images_out);
	put_s(out, r->bytes_out);
	record_chunks_encode(out, r);
	size_t ml = r->error_msg ? strlen(r->error_msg) : 0;
	if (ml > HR_MAX_ERROR_MSG)
		ml = HR_MAX_ERROR_MSG;
	put_u(out, ml);
	if (ml && dynbuf_add(out, r->error_msg, ml) < 0)
		xalloc_die();
	return 0;
}

void record_chunks_encode(struct dynbuf *out, const struct hr_record *r)
{
	put_u(out, r->n_chunks);
	int64_t prev = r->start_ns;
	for (uint32_t i = 0; i < r->n_chunks; i++) {
		/* wrap-around arithmetic: defined for any input, exact on decode */
		put_s(out, (int64_t)((uint64_t)r->chunk_ns[i] - (uint64_t)prev));
		prev = r->chunk_ns[i];
	}
}

static long chunks_read(struct rd *rd, int64_t start_ns, int64_t **arr, size_t *cap)
{
	uint64_t n = get_bounded(rd, HR_MAX_CHUNKS_PER_REQUEST);
	if (rd->bad)
		return -1;
	/* every delta takes at least one byte: cheap sanity check before allocating */
	if (n > (uint64_t)(rd->end - rd->p)) {
		rd->bad = 1;
		return -1;
	}
	if (n > *cap) {
		*arr = xrealloc(*arr, n * sizeof **arr);
		*cap = n;
	}
	uint64_t t = (uint64_t)start_ns;
	for (uint64_t i = 0; i < n; i++) {
		t += (uint64_t)get_s(rd);
		(*arr)[i] = (int64_t)t;
	}
	return rd->bad ? -1 : (long)n;
}

long record_chunks_decode(const void *blob, size_t len, int64_t start_ns, int64_t **arr,
			  size_t *cap)
{
	struct rd rd = {blob, (const unsigned char *)blob + len, 0};
	long n = chunks_read(&rd, start_ns, arr, cap);
	if (n >= 0 && rd.p != rd.end)
		return -1;
	return n;
}

static int decode_one(struct rd *rd, struct hr_record *r, unsigned version)
{
	record_init(r);
	r->seq = get_u(rd);
	r->req_id = get_u(rd);
	r->worker = (uint32_t)get_bounded(rd, UINT32_MAX);
	r->session = (uint32_t)get_bounded(rd, UINT32_MAX);
	r->turn = (uint32_t)get_bounded(rd, UINT32_MAX);
	r->phase = (uint8_t)get_bounded(rd, HR_PHASE__COUNT - 1);
	r->error = (uint8_t)get_bounded(rd, HR_ERR__COUNT - 1);
	r->isl_src = (uint8_t)get_bounded(rd, HR_TOKSRC__COUNT - 1);
	r->osl_src = (uint8_t)get_bounded(rd, HR_TOKSRC__COUNT - 1);
	r->flags = (uint8_t)get_bounded(rd, 0xff);
	int64_t st = get_s(rd);
	if (st < 0 || st > 999)
		rd->bad = 1;
	r->http_status = (int32_t)st;
	r->intended_ns = get_s(rd);
	r->start_ns = get_s(rd);
	r->headers_ns = get_s(rd);
	r->first_output_ns = get_s(rd);
	r->end_ns = get_s(rd);
	r->done_ns = get_s(rd);
	int64_t isl = get_s(rd), osl = get_s(rd), rt = get_s(rd);
	if (isl < -1 || isl > INT32_MAX || osl < -1 || osl > INT32_MAX || rt < -1 || rt > INT32_MAX)
		rd->bad = 1;
	r->isl = (int32_t)isl;
	r->osl = (int32_t)osl;
	r->reasoning_tokens = (int32_t)rt;
	int32_t *counts[10] = {&r->req_osl,   &r->usage_isl, &r->usage_osl,      &r->tok_isl,
	                       &r->tok_osl,   &r->images_in, &r->audio_in,       &r->media_bytes_in,
	                       &r->images_out, &r->bytes_out};
	for (int i = 0; i < (version >= 3 ? 10 : 5); i++) {
		int64_t c = get_s(rd);
		if (c < -1 || c > INT32_MAX)
			rd->bad = 1;
		*counts[i] = (int32_t)c;
	}
	if (rd->bad)
		return -1;
	size_t cap = 0;
	long n = chunks_read(rd, r->start_ns, &r->chunk_ns, &cap);
	if (n < 0)
		return -1;
	r->n_chunks = (uint32_t)n;
	uint64_t ml = get_bounded(rd, HR_MAX_ERROR_MSG);
	if (rd->bad || ml > (uint64_t)(rd->end - rd->p) || memchr(rd->p, 0, ml))
		return -1; /* messages are text: a NUL would silently truncate */
	if (ml) {
		r->error_msg = xstrndup((const char *)rd->p, ml);
		rd->p += ml;
	}
	return 0;
}

int record_batch_decode(const void *buf, size_t len, struct hr_record **recs, size_t *n,
			char *err)
{
	*recs = NULL;
	*n = 0;
	if (len < 4 || memcmp(buf, "HRB", 3) != 0)
		return errf(err, "record batch: bad magic");
	unsigned version = ((const unsigned char *)buf)[3];
	if (version != 2 && version != 3)
		return errf(err, "record batch: unsupported version %u", version);
	struct rd rd = {(const unsigned char *)buf + 4, (const unsigned char *)buf + len, 0};
	uint64_t count = get_bounded(&rd, HR_MAX_RECORDS_PER_BATCH);
	if (rd.bad)
		return errf(err, "record batch: bad count");
	struct hr_record *out = xcalloc(count ? count : 1, sizeof *out);
	for (uint64_t i = 0; i < count; i++) {
		if (decode_one(&rd, &out[i], version) < 0) {
			for (uint64_t j = 0; j <= i; j++)
				record_release(&out[j]);
			free(out);
			return errf(err, "record batch: record %llu is malformed",
				    (unsigned long long)i);
		}
	}
	if (rd.p != rd.end) {
		for (uint64_t j = 0; j < count; j++)
			record_release(&out[j]);
		free(out);
		return errf(err, "record batch: %zu trailing bytes", (size_t)(rd.end - rd.p));
	}
	*recs = out;
	*n = count;
	return 0;
}
