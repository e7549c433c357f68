/* reccodec.c - the stored record blob of the records table: encoder and
 * defensive decoder (the format is described in reccodec.h). */
#include "reccodec.h"

#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "util.h"

#define REC_FIXED_MAX (1 + 3 * 10 + 5 + 4 * 10 + 2 + 10 * 10 + 1 + 6 * 10 + 10 + 10)

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static unsigned char *put_zigzag(unsigned char *p, int64_t v)
{
	return put_varint(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

#define REC_COUNTS 10 /* the further counts, in their stored order: */
#define REC_COUNT_FIELDS(r)                                                                        \
	{                                                                                          \
		&(r)->req_osl, &(r)->usage_isl, &(r)->usage_osl, &(r)->tok_isl, &(r)->tok_osl,     \
		    &(r)->images_in, &(r)->audio_in, &(r)->media_bytes_in, &(r)->images_out,       \
		    &(r)->bytes_out                                                                \
	}

static const int64_t *rec_time(const struct hr_record *r, int i)
{
	const int64_t *t[6] = {&r->intended_ns,     &r->start_ns, &r->headers_ns,
	                       &r->first_output_ns, &r->end_ns,   &r->done_ns};
	return t[i];
}

size_t rec_bound(const struct hr_record *r, size_t msg_len)
{
	return REC_FIXED_MAX + (size_t)r->n_chunks * 10 + 10 + msg_len;
}

unsigned char *rec_pack(unsigned char *p, const struct hr_record *r, size_t msg_len)
{
	*p++ = REC_FORMAT;
	p = put_varint(p, r->req_id);
	p = put_varint(p, r->session);
	p = put_varint(p, r->turn);
	*p++ = r->phase;
	*p++ = r->flags;
	*p++ = r->error;
	*p++ = r->isl_src;
	*p++ = r->osl_src;
	p = put_zigzag(p, r->http_status);
	p = put_zigzag(p, r->isl);
	p = put_zigzag(p, r->osl);
	p = put_zigzag(p, r->reasoning_tokens);
	const int32_t *counts[REC_COUNTS] = REC_COUNT_FIELDS(r);
	unsigned cmask = 0;
	for (int i = 0; i < REC_COUNTS; i++)
		if (*counts[i] >= 0)
			cmask |= 1u << i;
	p = put_varint(p, cmask);
	for (int i = 0; i < REC_COUNTS; i++)
		if (cmask & (1u << i))
			p = put_varint(p, (uint64_t)*counts[i]);
	unsigned mask = 0;
	for (int i = 0; i < 6; i++)
		if (*rec_time(r, i) != HR_NO_TIME)
			mask |= 1u << i;
	*p++ = (unsigned char)mask;
	uint64_t base = (uint64_t)r->start_ns;
	if (mask & 2)
		p = put_zigzag(p, r->start_ns);
	for (int i = 0; i < 6; i++)
		if (i != 1 && (mask & (1u << i)))
			p = put_zigzag(p, (int64_t)((uint64_t)*rec_time(r, i) - base));
	p = put_varint(p, r->n_chunks);
	uint64_t prev = base;
	for (uint32_t i = 0; i < r->n_chunks; i++) {
		p = put_zigzag(p, (int64_t)((uint64_t)r->chunk_ns[i] - prev));
		prev = (uint64_t)r->chunk_ns[i];
	}
	p = put_varint(p, r->error_msg ? msg_len + 1 : 0);
	if (msg_len)
		memcpy(p, r->error_msg, msg_len);
	return p + msg_len;
}

struct unpacker {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t get_varint(struct unpacker *u)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (u->p >= u->end)
			break;
		unsigned c = *u->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	u->bad = 1;
	return 0;
}

static int64_t get_zigzag(struct unpacker *u)
{
	uint64_t v = get_varint(u);
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static unsigned get_byte(struct unpacker *u)
{
	if (u->p >= u->end) {
		u->bad = 1;
		return 0;
	}
	return *u->p++;
}

int rec_unpack(const void *blob, size_t len, struct hr_record *r, struct rec_mem *mem)
{
	struct unpacker u = {blob, (const unsigned char *)blob + len, 0};
	unsigned format = get_byte(&u);
	if (format < 1 || format > REC_FORMAT)
		return -1;
	r->req_id = get_varint(&u);
	uint64_t session = get_varint(&u), turn = get_varint(&u);
	r->session = (uint32_t)session;
	r->turn = (uint32_t)turn;
	r->phase = (uint8_t)get_byte(&u);
	r->flags = (uint8_t)get_byte(&u);
	r->error = (uint8_t)get_byte(&u);
	r->isl_src = (uint8_t)get_byte(&u);
	r->osl_src = (uint8_t)get_byte(&u);
	int64_t status = get_zigzag(&u), isl = get_zigzag(&u), osl = get_zigzag(&u),
	        rt = get_zigzag(&u);
	if (session > UINT32_MAX || turn > UINT32_MAX || status < INT32_MIN || status > INT32_MAX ||
	    isl < INT32_MIN || isl > INT32_MAX || osl < INT32_MIN || osl > INT32_MAX ||
	    rt < INT32_MIN || rt > INT32_MAX)
		return -1;
	r->http_status = (int32_t)status;
	r->isl = (int32_t)isl;
	r->osl = (int32_t)osl;
	r->reasoning_tokens = (int32_t)rt;
	int32_t *counts[REC_COUNTS] = REC_COUNT_FIELDS(r);
	uint64_t cmask = format >= 3 ? get_varint(&u) : format == 2 ? get_byte(&u) : 0;
	if (cmask >> (format >= 3 ? REC_COUNTS : 5))
		return -1;
	for (int i = 0; i < REC_COUNTS; i++) {
		uint64_t c = (cmask & (1ull << i)) ? get_varint(&u) : UINT64_MAX;
		if (c != UINT64_MAX && c > INT32_MAX)
			return -1;
		*counts[i] = c == UINT64_MAX ? -1 : (int32_t)c;
	}
	unsigned mask = get_byte(&u);
	if (mask > 0x3f)
		return -1;
	r->start_ns = (mask & 2) ? get_zigzag(&u) : HR_NO_TIME;
	uint64_t base = (uint64_t)r->start_ns;
	int64_t *t[6] = {&r->intended_ns,     &r->start_ns, &r->headers_ns,
	                 &r->first_output_ns, &r->end_ns,   &r->done_ns};
	for (int i = 0; i < 6; i++)
		if (i != 1)
			*t[i] = (mask & (1u << i)) ? (int64_t)(base + (uint64_t)get_zigzag(&u))
			                           : HR_NO_TIME;
	uint64_t n = get_varint(&u);
	if (u.bad || n > HR_MAX_CHUNKS_PER_REQUEST || n > (uint64_t)(u.end - u.p))
		return -1; /* every delta takes a byte at least */
	if (n > mem->chunk_cap) {
		mem->chunks = xrealloc(mem->chunks, n * sizeof *mem->chunks);
		mem->chunk_cap = n;
	}
	uint64_t prev = base;
	for (uint64_t i = 0; i < n; i++) {
		prev += (uint64_t)get_zigzag(&u);
		mem->chunks[i] = (int64_t)prev;
	}
	r->n_chunks = (uint32_t)n;
	r->chunk_ns = mem->chunks;
	uint64_t ml = get_varint(&u);
	if (u.bad || (ml && ml - 1 != (uint64_t)(u.end - u.p)))
		return -1;
	r->error_msg = NULL;
	if (ml) {
		if (ml > mem->msg_cap) {
			mem->msg = xrealloc(mem->msg, ml);
			mem->msg_cap = ml;
		}
		memcpy(mem->msg, u.p, ml - 1);
		mem->msg[ml - 1] = '\0';
		r->error_msg = mem->msg;
	} else if (u.p != u.end) {
		return -1;
	}
	return 0;
}

void rec_mem_release(struct rec_mem *mem)
{
	free(mem->chunks);
	free(mem->msg);
	memset(mem, 0, sizeof *mem);
}
