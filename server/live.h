/* live.h - the running run as it happens, for GET /api/v1/runs/{id}/live
 * (server-sent events; docs/api.md, "Live progress"). The runner posts its
 * progress counters and every record batch here; this module keeps the
 * last LIVE_SECONDS seconds as per-second aggregates (sends intended and
 * actual, completions, errors, requests in flight, output tokens per
 * second, TTFT / ITL / latency p50 and p99 from a bounded sample) and
 * streams them to at most HR_MAX_LIVE_STREAMS clients at once, each for at
 * most HR_LIVE_MAX_S seconds, with a comment line every HR_LIVE_HEARTBEAT_S
 * seconds so that proxies keep the stream and a dead client is noticed.
 * The streams are suspended MHD connections, resumed by one ticker thread
 * when they have something to send: no API thread ever waits.
 */
#ifndef HR_LIVE_H
#define HR_LIVE_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* The runner: run id has started (its workers are being spawned). */
void live_begin(int64_t id);
/* Its clock's zero (mono ns): the records' times count from it. */
void live_set_t0(int64_t id, int64_t t0_mono);
/* Its latest counters (post_progress). */
void live_progress(int64_t id, const char *phase, long long sent, long long completed,
		   long long errors, long long in_flight, long long records, int workers);
/* A record batch (borrowed; read before the store takes it). */
void live_records(int64_t id, const struct hr_record *recs, size_t n);
/* Run id has ended in state (its end is in the store); also for a queued
 * run cancelled before it started. */
void live_end(int64_t id, const char *state);

/* The answer of GET /runs/{id}/live for run id, in state at the call
 * (queued, running, or a final one: then only its hello and end events),
 * to be queued on conn (200, and on no other connection); NULL when
 * HR_MAX_LIVE_STREAMS streams are open or the daemon is stopping (the
 * caller answers 503 busy). */
struct MHD_Response *live_response(struct MHD_Connection *conn, int64_t id, const char *state);
/* Streams open now. */
int live_streams_open(void);
/* Before MHD_stop_daemon: every stream ends (none stays suspended, which
 * MHD forbids at its stop) and the ticker stops. */
void live_shutdown(void);

#endif
