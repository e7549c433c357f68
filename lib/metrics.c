/* metrics.c - per-request metric functions (see metrics.h, docs/metrics.md). */
#include "metrics.h"

#include <math.h>
#include <string.h>

#include "stats.h"

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

static double m_ttfo(const struct hr_record *r)
{
	if (!streamed(r) || r->first_output_ns == HR_NO_TIME)
		return NAN;
	return ns_to_ms(r->first_output_ns - r->start_ns);
}

/* Coordinated-omission view: measured from when the request was meant to
 * go out, as wrk2 does, not from when the client managed to send it. */
static double m_lag(const struct hr_record *r)
{
	if (r->intended_ns == HR_NO_TIME || r->start_ns == HR_NO_TIME)
		return NAN;
	return ns_to_ms(r->start_ns - r->intended_ns);
}

static double m_sched_ttft(const struct hr_record *r)
{
	if (!streamed(r) || r->n_chunks < 1 || r->intended_ns == HR_NO_TIME)
		return NAN;
	return ns_to_ms(r->chunk_ns[0] - r->intended_ns);
}

static double m_sched_latency(const struct hr_record *r)
{
	if (r->end_ns == HR_NO_TIME || r->intended_ns == HR_NO_TIME)
		return NAN;
	return ns_to_ms(r->end_ns - r->intended_ns);
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
	{"time_to_first_token", "ms", "Time to First Token", m_ttft, METRIC_VALID},
	{"time_to_second_token", "ms", "Time to Second Token", m_ttst, METRIC_VALID},
	{"time_to_first_output_token", "ms", "Time to First Output Token", m_ttfo, METRIC_VALID},
	{"request_latency", "ms", "Request Latency", m_latency, METRIC_VALID},
	{"inter_token_latency", "ms", "Inter Token Latency", m_itl, METRIC_VALID},
	{"output_token_throughput_per_user", "tokens/sec/user", "Output Token Throughput Per User",
	 m_tps_user, METRIC_VALID},
	{"input_sequence_length", "tokens", "Input Sequence Length", m_isl, METRIC_VALID},
	{"output_sequence_length", "tokens", "Output Sequence Length", m_osl, METRIC_VALID},
	{"schedule_lag", "ms", "Schedule Lag", m_lag, METRIC_SENT},
	{"scheduled_time_to_first_token", "ms", "Scheduled Time to First Token", m_sched_ttft,
	 METRIC_VALID},
	{"scheduled_request_latency", "ms", "Scheduled Request Latency", m_sched_latency,
	 METRIC_VALID},
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

const struct metric_info metric_catalog[] = {
	{"time_to_first_token", "ms", METRIC_LOWER_BETTER, 0},
	{"time_to_second_token", "ms", METRIC_LOWER_BETTER, 0},
	{"time_to_first_output_token", "ms", METRIC_LOWER_BETTER, 0},
	{"request_latency", "ms", METRIC_LOWER_BETTER, 0},
	{"inter_token_latency", "ms", METRIC_LOWER_BETTER, 0},
	{"inter_chunk_latency", "ms", METRIC_LOWER_BETTER, 0},
	{"output_token_throughput_per_user", "tokens/sec/user", METRIC_HIGHER_BETTER, 0},
	{"input_sequence_length", "tokens", METRIC_NO_DIRECTION, 0},
	{"output_sequence_length", "tokens", METRIC_NO_DIRECTION, 0},
	{"schedule_lag", "ms", METRIC_LOWER_BETTER, 0},
	{"scheduled_time_to_first_token", "ms", METRIC_LOWER_BETTER, 0},
	{"scheduled_request_latency", "ms", METRIC_LOWER_BETTER, 0},
	{"request_throughput", "requests/sec", METRIC_HIGHER_BETTER, 1},
	{"output_token_throughput", "tokens/sec", METRIC_HIGHER_BETTER, 1},
	{"total_token_throughput", "tokens/sec", METRIC_HIGHER_BETTER, 1},
	{"goodput", "requests/sec", METRIC_HIGHER_BETTER, 1},
	{"image_throughput", "images/sec", METRIC_HIGHER_BETTER, 1},
	{"error_rate", "fraction", METRIC_LOWER_BETTER, 1},
};
const size_t metric_catalog_count = sizeof metric_catalog / sizeof metric_catalog[0];

const struct metric_info *metric_info(const char *tag)
{
	for (size_t i = 0; tag && i < metric_catalog_count; i++)
		if (strcmp(metric_catalog[i].tag, tag) == 0)
			return &metric_catalog[i];
	return NULL;
}

const char *const metric_stat_names[METRIC_NSTATS] = {"avg", "min", "max", "std", "p1",
						      "p5",  "p10", "p25", "p50", "p75",
						      "p90", "p95", "p99"};

int metric_stat_index(const char *name)
{
	if (name && strcmp(name, "value") == 0)
		return 0;
	for (int i = 0; name && i < METRIC_NSTATS; i++)
		if (strcmp(metric_stat_names[i], name) == 0)
			return i;
	return -1;
}
