/* metrics.c - per-request metric functions (see metrics.h, docs/metrics.md). */
#include "metrics.h"

#include <math.h>

static int streamed(const struct hr_record *r)
{
	return (r->flags & HR_REC_STREAMED) != 0;
}

static double m_ttft(const struct hr_record *r)
{
	if (!streamed(r) || r->n_chunks < 1)
		return NAN;
	return ns_to_ms(r->chunk_ns[0] - r->start_ns);
}

static double m_ttst(const struct hr_record *r)
{
	if (!streamed(r) || r->n_chunks < 2)
		return NAN;
	return ns_to_ms(r->chunk_ns[1] - r->chunk_ns[0]);
}

static double m_latency(const struct hr_record *r)
{
	if (r->end_ns == HR_NO_TIME || r->start_ns == HR_NO_TIME)
		return NAN;
	return ns_to_ms(r->end_ns - r->start_ns);
}

static double m_itl(const struct hr_record *r)
{
	if (!streamed(r) || r->n_chunks < 1 || r->osl < 2)
		return NAN;
	return (m_latency(r) - m_ttft(r)) / (double)(r->osl - 1);
}

static double m_tps_user(const struct hr_record *r)
{
	double itl = m_itl(r);
	if (!(itl > 0))
		return NAN;
	return 1000.0 / itl;
}

static double m_isl(const struct hr_record *r)
{
	return r->isl >= 0 ? (double)r->isl : NAN;
}

static double m_osl(const struct hr_record *r)
{
	return r->osl >= 0 ? (double)r->osl : NAN;
}

const struct metric_def metric_defs[] = {
	{"time_to_first_token", "ms", "Time to First Token", m_ttft},
	{"time_to_second_token", "ms", "Time to Second Token", m_ttst},
	{"request_latency", "ms", "Request Latency", m_latency},
	{"inter_token_latency", "ms", "Inter Token Latency", m_itl},
	{"output_token_throughput_per_user", "tokens/sec/user", "Output Token Throughput Per User",
	 m_tps_user},
	{"input_sequence_length", "tokens", "Input Sequence Length", m_isl},
	{"output_sequence_length", "tokens", "Output Sequence Length", m_osl},
};
const size_t metric_defs_count = sizeof metric_defs / sizeof metric_defs[0];

int record_is_valid(const struct hr_record *r)
{
	if (r->http_status != 200 || r->error != HR_ERR_NONE)
		return 0;
	if (streamed(r) && r->n_chunks < 1)
		return 0;
	return 1;
}

void metrics_chunk_gaps(const struct hr_record *r, void (*push)(void *ctx, double v), void *ctx)
{
	for (uint32_t i = 1; i < r->n_chunks; i++)
		push(ctx, ns_to_ms(r->chunk_ns[i] - r->chunk_ns[i - 1]));
}
