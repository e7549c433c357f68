/* live.c - the running run's per-second aggregates and their server-sent
 * event streams (see live.h).
 *
 * One board, under one mutex: the run the runner is running, its counters,
 * and a ring of LIVE_SECONDS seconds on its clock. A record is counted
 * where its events fall: its intended send, its send, its end (completed
 * or failed, and its TTFT / ITL / latency, sampled: at most LIVE_SAMPLE
 * values a second, a reservoir beyond), its output tokens spread over its
 * chunks' arrivals. Records arrive when their requests end, so a second
 * can change after it was sent: a change sends it again (a client keeps
 * the last value of each second).
 *
 * A stream is a suspended MHD connection (the API's threads never wait):
 * its reader writes what is due, or suspends the connection and returns 0;
 * the ticker thread resumes it when the board changed (at most once a
 * second per stream), a heartbeat or its end is due.
 */
#include "live.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynbuf.h"
#include "hrlimits.h"
#include "metrics.h"
#include "stats.h"
#include "util.h"

#define LIVE_SECONDS 120   /* the seconds kept */
#define LIVE_SAMPLE 512    /* values of one metric kept per second */
#define LIVE_NMET 3
#define LIVE_ENDED 32      /* recently ended runs remembered */
#define TICK_NS 200000000LL
#define EMIT_EVERY_NS 1000000000LL
#define NS 1000000000LL

static const char *const met_tags[LIVE_NMET] = {"time_to_first_token", "inter_token_latency",
						"request_latency"};

struct sec {
	int64_t s;    /* second since t0; -1: unused */
	uint64_t seq; /* the board's seq at its last change */
	long long intended, sent, completed, errors, in_flight;
	int have_in_flight;
	double tokens;
	double *v[LIVE_NMET];
	size_t n[LIVE_NMET];
	unsigned long long seen[LIVE_NMET];
};

struct stream {
	struct stream *next;
	struct MHD_Connection *conn;
	int64_t id;
	char state0[16]; /* its state when it was opened */
	char final[16];  /* the same, when it was final */
	int hello, done, suspended;
	int64_t opened, last_write, last_emit;
	uint64_t seen, seen_progress; /* board seqs already sent */
	int64_t upto;                 /* seconds before this were sent once complete */
	struct dynbuf buf;
	size_t off;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t id, t0; /* the run on the board (0: none), its clock's zero (0: not yet) */
	char state[16]; /* its final state, "" while it runs */
	uint64_t seq, progress_seq;
	char phase[16];
	long long sent, completed, errors, in_flight, records;
	int workers;
	struct sec sec[LIVE_SECONDS];
	int64_t ended_id[LIVE_ENDED];
	char ended_state[LIVE_ENDED][16];
	int ended_next;
	struct stream *streams;
	int n_streams, ticker_on, stopping;
	pthread_t ticker;
	uint64_t rng;
	int met[LIVE_NMET]; /* metric_defs indexes; -1 before the first look-up */
	int64_t latest;     /* sec_at's bound (latest_second) */
} B = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .met = {-1, -1, -1},
       .rng = 0x9e3779b97f4a7c15ULL};

static void put_num(struct dynbuf *out, double v)
{
	char buf[64];
	fmt_double(buf, v);
	dynbuf_addstr(out, buf);
}

/* --- the board (B.mu held) ---------------------------------------------------------- */

static void reset_secs(void)
{
	for (int i = 0; i < LIVE_SECONDS; i++) {
		struct sec *x = &B.sec[i];
		double *keep[LIVE_NMET];
		memcpy(keep, x->v, sizeof keep);
		memset(x, 0, sizeof *x);
		memcpy(x->v, keep, sizeof keep);
		x->s = -1;
	}
}

/* The latest second a record may name: a minute past now on the run's
 * clock (a worker's times are not trusted: one far in the future would
 * take a slot for good). */
static int64_t latest_second(void)
{
	return B.t0 ? (mono_ns() - B.t0) / NS + 60 : 0;
}

/* The second of ns on the run's clock, made current (an older second in
 * its slot is dropped), or NULL when it is out of the ring or later than
 * B.latest. */
static struct sec *sec_at(int64_t ns)
{
	if (ns == HR_NO_TIME || ns < 0 || ns / NS > B.latest)
		return NULL;
	int64_t s = ns / NS;
	struct sec *x = &B.sec[s % LIVE_SECONDS];
	if (x->s == s)
		return x;
	if (x->s > s)
		return NULL; /* older than the ring */
	double *keep[LIVE_NMET];
	memcpy(keep, x->v, sizeof keep);
	memset(x, 0, sizeof *x);
	memcpy(x->v, keep, sizeof keep);
	x->s = s;
	return x;
}

static uint64_t next_rand(void)
{
	B.rng ^= B.rng << 13;
	B.rng ^= B.rng >> 7;
	B.rng ^= B.rng << 17;
	return B.rng;
}

static void sample(struct sec *x, int m, double v)
{
	if (!x->v[m])
		x->v[m] = xmalloc(LIVE_SAMPLE * sizeof *x->v[m]);
	x->seen[m]++;
	if (x->n[m] < LIVE_SAMPLE) {
		x->v[m][x->n[m]++] = v;
		return;
	}
	uint64_t j = next_rand() % x->seen[m];
	if (j < LIVE_SAMPLE)
		x->v[m][j] = v;
}

static void ended_note(int64_t id, const char *state)
{
	B.ended_id[B.ended_next] = id;
	snprintf(B.ended_state[B.ended_next], sizeof B.ended_state[0], "%s", state);
	B.ended_next = (B.ended_next + 1) % LIVE_ENDED;
	if (B.id == id)
		snprintf(B.state, sizeof B.state, "%s", state);
	B.seq++;
}

/* Run id's final state if it has ended, else NULL. */
static const char *ended_state(int64_t id)
{
	if (B.id == id && B.state[0])
		return B.state;
	for (int i = 0; i < LIVE_ENDED; i++)
		if (B.ended_id[i] == id)
			return B.ended_state[i];
	return NULL;
}

/* --- what the runner posts ---------------------------------------------------------- */

void live_begin(int64_t id)
{
	pthread_mutex_lock(&B.mu);
	B.id = id;
	B.t0 = 0;
	B.state[0] = 0;
	snprintf(B.phase, sizeof B.phase, "starting");
	B.sent = B.completed = B.errors = B.in_flight = B.records = 0;
	B.workers = 0;
	reset_secs();
	B.progress_seq = ++B.seq;
	pthread_mutex_unlock(&B.mu);
}

void live_set_t0(int64_t id, int64_t t0_mono)
{
	pthread_mutex_lock(&B.mu);
	if (B.id == id) {
		B.t0 = t0_mono;
		B.seq++;
	}
	pthread_mutex_unlock(&B.mu);
}

void live_progress(int64_t id, const char *phase, long long sent, long long completed,
		   long long errors, long long in_flight, long long records, int workers)
{
	pthread_mutex_lock(&B.mu);
	if (B.id == id) {
		snprintf(B.phase, sizeof B.phase, "%s", phase);
		B.sent = sent;
		B.completed = completed;
		B.errors = errors;
		B.in_flight = in_flight;
		B.records = records;
		B.workers = workers;
		B.progress_seq = ++B.seq;
		B.latest = latest_second();
		struct sec *x = B.t0 ? sec_at(mono_ns() - B.t0) : NULL;
		if (x) {
			x->in_flight = in_flight;
			x->have_in_flight = 1;
			x->seq = B.seq;
		}
	}
	pthread_mutex_unlock(&B.mu);
}

void live_records(int64_t id, const struct hr_record *recs, size_t n)
{
	pthread_mutex_lock(&B.mu);
	if (B.id != id || !n) {
		pthread_mutex_unlock(&B.mu);
		return;
	}
	if (B.met[0] < 0)
		for (int m = 0; m < LIVE_NMET; m++)
			for (size_t i = 0; i < metric_defs_count; i++)
				if (strcmp(metric_defs[i].tag, met_tags[m]) == 0)
					B.met[m] = (int)i;
	uint64_t seq = ++B.seq;
	B.latest = latest_second();
	struct sec *x;
	for (size_t k = 0; k < n; k++) {
		const struct hr_record *r = &recs[k];
		if ((x = sec_at(r->intended_ns))) {
			x->intended++;
			x->seq = seq;
		}
		if ((x = sec_at(r->start_ns))) {
			x->sent++;
			x->seq = seq;
		}
		int64_t end = r->end_ns != HR_NO_TIME ? r->end_ns : r->done_ns;
		if (!record_is_valid(r)) {
			int64_t t = end != HR_NO_TIME ? end
				    : r->start_ns != HR_NO_TIME ? r->start_ns : r->intended_ns;
			if ((x = sec_at(t))) {
				x->errors++;
				x->seq = seq;
			}
			continue;
		}
		if ((x = sec_at(end))) {
			x->completed++;
			x->seq = seq;
			for (int m = 0; m < LIVE_NMET; m++) {
				if (B.met[m] < 0)
					continue;
				double v = metric_defs[B.met[m]].fn(r);
				if (v == v) /* not NaN */
					sample(x, m, v);
			}
		}
		if (r->osl <= 0)
			continue;
		if (r->n_chunks && r->chunk_ns) {
			double per = (double)r->osl / (double)r->n_chunks;
			for (uint32_t c = 0; c < r->n_chunks; c++)
				if ((x = sec_at(r->chunk_ns[c]))) {
					x->tokens += per;
					x->seq = seq;
				}
		} else if ((x = sec_at(end))) {
			x->tokens += r->osl;
			x->seq = seq;
		}
	}
	pthread_mutex_unlock(&B.mu);
}

void live_end(int64_t id, const char *state)
{
	pthread_mutex_lock(&B.mu);
	ended_note(id, state);
	pthread_cond_signal(&B.cv);
	pthread_mutex_unlock(&B.mu);
}

/* --- streams (B.mu held) ------------------------------------------------------------ */

static void event_second(struct dynbuf *o, const struct sec *x)
{
	dynbuf_printf(o,
		      "event: second\ndata: {\"t_s\":%lld,\"intended\":%lld,\"sent\":%lld,"
		      "\"completed\":%lld,\"errors\":%lld,\"in_flight\":",
		      (long long)x->s, x->intended, x->sent, x->completed, x->errors);
	if (x->have_in_flight)
		dynbuf_printf(o, "%lld", x->in_flight);
	else
		dynbuf_addstr(o, "null");
	dynbuf_addstr(o, ",\"output_tokens_per_s\":");
	put_num(o, x->tokens);
	for (int m = 0; m < LIVE_NMET; m++) {
		dynbuf_printf(o, ",\"%s\":", met_tags[m]);
		if (!x->n[m]) {
			dynbuf_addstr(o, "null");
			continue;
		}
		double v[LIVE_SAMPLE];
		memcpy(v, x->v[m], x->n[m] * sizeof *v);
		stats_sort(v, x->n[m]);
		dynbuf_addstr(o, "{\"p50\":");
		put_num(o, stats_percentile_sorted(v, x->n[m], 50));
		dynbuf_addstr(o, ",\"p99\":");
		put_num(o, stats_percentile_sorted(v, x->n[m], 99));
		dynbuf_printf(o, ",\"count\":%llu}", x->seen[m]);
	}
	dynbuf_addstr(o, "}\n\n");
}

static int64_t now_second(int64_t now)
{
	return B.t0 && now >= B.t0 ? (now - B.t0) / NS : 0;
}

/* The board has news for st, and it may be sent now. */
static int news(const struct stream *st, int64_t now)
{
	if (B.id != st->id)
		return 0;
	if (B.seq <= st->seen && now_second(now) <= st->upto)
		return 0;
	return now - st->last_emit >= EMIT_EVERY_NS;
}

static int due(const struct stream *st, int64_t now)
{
	return B.stopping || st->final[0] || ended_state(st->id) ||
	       now - st->opened >= (int64_t)HR_LIVE_MAX_S * NS ||
	       now - st->last_write >= (int64_t)HR_LIVE_HEARTBEAT_S * NS || news(st, now);
}

/* Appends what is due for st to its buffer. */
static void fill(struct stream *st, int64_t now)
{
	struct dynbuf *o = &st->buf;
	const char *end = st->final[0] ? st->final : ended_state(st->id);
	if (!st->hello) {
		st->hello = 1;
		dynbuf_printf(o,
			      "retry: 3000\nevent: hello\ndata: {\"run_id\":%lld,\"state\":\"%s\","
			      "\"heartbeat_s\":%d,\"max_s\":%d}\n\n",
			      (long long)st->id,
			      end ? end : st->state0, HR_LIVE_HEARTBEAT_S,
			      HR_LIVE_MAX_S);
	}
	if (B.id == st->id && (end || news(st, now))) {
		if (B.progress_seq > st->seen_progress) {
			dynbuf_printf(o,
				      "event: progress\ndata: {\"run_id\":%lld,\"phase\":\"%s\","
				      "\"sent\":%lld,\"completed\":%lld,\"errors\":%lld,"
				      "\"in_flight\":%lld,\"records\":%lld,\"workers\":%d,\"t_s\":",
				      (long long)st->id, B.phase, B.sent, B.completed, B.errors,
				      B.in_flight, B.records, B.workers);
			if (B.t0 && now >= B.t0)
				put_num(o, (double)(now - B.t0) / 1e9);
			else
				dynbuf_addstr(o, "null");
			dynbuf_addstr(o, "}\n\n");
			st->seen_progress = B.progress_seq;
		}
		int64_t ns = now_second(now);
		if (B.t0) {
			/* oldest first; the current second only at the end */
			for (int64_t s = ns - LIVE_SECONDS + 1; s <= ns + 1; s++) {
				if (s < 0)
					continue;
				const struct sec *x = &B.sec[s % LIVE_SECONDS];
				if (x->s != s || (s >= ns && !end))
					continue;
				if (x->seq > st->seen || s >= st->upto)
					event_second(o, x);
			}
		}
		st->seen = B.seq;
		st->upto = end ? ns + 2 : ns;
		st->last_emit = now;
	}
	if (end) {
		dynbuf_printf(o, "event: end\ndata: {\"run_id\":%lld,\"state\":\"%s\"}\n\n",
			      (long long)st->id, end);
		st->done = 1;
	} else if (B.stopping || now - st->opened >= (int64_t)HR_LIVE_MAX_S * NS) {
		st->done = 1; /* a plain end: the browser connects again */
	} else if (!o->len && now - st->last_write >= (int64_t)HR_LIVE_HEARTBEAT_S * NS) {
		dynbuf_addstr(o, ": keep-alive\n\n");
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct stream *st = cls;
	pthread_mutex_lock(&B.mu);
	int64_t now = mono_ns();
	if (st->off == st->buf.len) {
		dynbuf_reset(&st->buf);
		st->off = 0;
		if (!st->done)
			fill(st, now);
		if (!st->buf.len) {
			if (st->done || B.stopping) {
				pthread_mutex_unlock(&B.mu);
				return MHD_CONTENT_READER_END_OF_STREAM;
			}
			/* nothing now: off MHD's loop until the ticker resumes it */
			st->suspended = 1;
			MHD_suspend_connection(st->conn);
			pthread_mutex_unlock(&B.mu);
			return 0;
		}
	}
	size_t n = st->buf.len - st->off;
	if (n > max)
		n = max;
	memcpy(out, st->buf.data + st->off, n);
	st->off += n;
	st->last_write = now;
	pthread_mutex_unlock(&B.mu);
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;
	pthread_mutex_lock(&B.mu);
	for (struct stream **p = &B.streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			B.n_streams--;
			break;
		}
	pthread_mutex_unlock(&B.mu);
	dynbuf_release(&st->buf);
	free(st);
}

static void *ticker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&B.mu);
	while (!B.stopping) {
		int64_t now = mono_ns();
		for (struct stream *st = B.streams; st; st = st->next)
			if (st->suspended && due(st, now)) {
				st->suspended = 0;
				MHD_resume_connection(st->conn);
			}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_NS;
		if (ts.tv_nsec >= NS) {
			ts.tv_sec++;
			ts.tv_nsec -= NS;
		}
		pthread_cond_timedwait(&B.cv, &B.mu, &ts);
	}
	pthread_mutex_unlock(&B.mu);
	return NULL;
}

struct MHD_Response *live_response(struct MHD_Connection *conn, int64_t id, const char *state)
{
	pthread_mutex_lock(&B.mu);
	if (B.stopping || B.n_streams >= HR_MAX_LIVE_STREAMS) {
		pthread_mutex_unlock(&B.mu);
		return NULL;
	}
	if (!B.ticker_on) {
		if (pthread_create(&B.ticker, NULL, ticker_main, NULL) != 0) {
			pthread_mutex_unlock(&B.mu);
			return NULL;
		}
		B.ticker_on = 1;
	}
	struct stream *st = xcalloc(1, sizeof *st);
	st->conn = conn;
	st->id = id;
	snprintf(st->state0, sizeof st->state0, "%s", state);
	if (strcmp(state, "queued") != 0 && strcmp(state, "running") != 0)
		snprintf(st->final, sizeof st->final, "%s", state);
	st->opened = st->last_write = mono_ns();
	st->last_emit = st->opened - EMIT_EVERY_NS;
	st->upto = -1;
	dynbuf_init(&st->buf, 1 << 20);
	st->next = B.streams;
	B.streams = st;
	B.n_streams++;
	pthread_mutex_unlock(&B.mu);
	struct MHD_Response *r =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
	if (!r) {
		stream_free(st);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	return r;
}

int live_streams_open(void)
{
	pthread_mutex_lock(&B.mu);
	int n = B.n_streams;
	pthread_mutex_unlock(&B.mu);
	return n;
}

void live_shutdown(void)
{
	pthread_mutex_lock(&B.mu);
	B.stopping = 1;
	for (struct stream *st = B.streams; st; st = st->next)
		if (st->suspended) {
			st->suspended = 0;
			MHD_resume_connection(st->conn);
		}
	int join = B.ticker_on;
	B.ticker_on = 0;
	pthread_cond_broadcast(&B.cv);
	pthread_mutex_unlock(&B.mu);
	if (join)
		pthread_join(B.ticker, NULL);
}
