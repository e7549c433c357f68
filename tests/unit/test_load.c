/* test_load.c - the worker's load model (worker/load.c) driven by hand:
 * what a paced run with a concurrency ceiling does at the end of its
 * duration, whatever order the completion and the end's timer come in;
 * and times far past int64 nanoseconds (a trace at the slowest speedup, a
 * schedule at the lowest rate), which are clamped, never overflowed. */
#include "../../worker/load.c"
#include "../../worker/dsplan.c"
#include "../../worker/timers.c"

#include "tap.h"

#define MS 1000000LL

/* One phase of 100/s constant arrivals for 50 ms with at most `ceiling` in
 * flight, started at 0, and what the last send_all saw. */
struct fx {
	struct load l;
	struct share_phase ph;
	struct theap h;
	int64_t last; /* intended time of the last send */
	int verdict;  /* the answer that stopped send_all */
};

static void fx_start(struct fx *f, int ceiling)
{
	memset(f, 0, sizeof *f);
	f->ph.mode = SPEC_LOAD_RATE;
	f->ph.slots = ceiling;
	f->ph.req_id_stride = 1;
	f->ph.rate.law = SCHED_CONSTANT;
	f->ph.rate.rate = 100;
	f->ph.rate.duration_s = 0.05;
	f->last = -1;
	theap_init(&f->h);
	struct load_cfg cfg = {.ph = &f->ph, .phase = HR_PHASE_PROFILING, .worker = 0,
	                       .workers = 1, .seed = 1, .heap = &f->h};
	load_init(&f->l, &cfg);
	load_begin(&f->l, 0);
}

static void fx_release(struct fx *f)
{
	load_release(&f->l);
	theap_release(&f->h);
}

/* Sends everything load_next allows at now (each send is then in flight);
 * returns how many. */
static int send_all(struct fx *f, int64_t now)
{
	struct issue is;
	int n = 0;
	while ((f->verdict = load_next(&f->l, now, &is)) == LOAD_SEND) {
		f->last = is.intended_ns;
		n++;
	}
	return n;
}

/* The slot frees after the end, before the end's timer was handled: the
 * arrivals it held back are dropped, not sent late. */
static void test_held_then_freed_after_the_end(void)
{
	struct fx f;
	fx_start(&f, 1);
	CHECK_EQ_INT(send_all(&f, 0), 1);
	CHECK_EQ_INT(f.verdict, LOAD_WAIT);
	CHECK_EQ_INT(send_all(&f, 45 * MS), 0); /* four due, all held */
	CHECK_EQ_INT(f.verdict, LOAD_WAIT);
	load_done(&f.l, NULL, 55 * MS, true);
	CHECK_EQ_INT(send_all(&f, 55 * MS), 0);
	CHECK_EQ_INT(f.verdict, LOAD_EXHAUSTED);
	CHECK(f.l.ended);
	CHECK_EQ_INT(f.l.ended_at, 50 * MS);
	CHECK_EQ_INT(f.l.dropped, 4);
	fx_release(&f);
}

/* The ceiling blocked before anything else was due; the arrivals that fell
 * due meanwhile were held by it just the same, and are dropped when the
 * slot frees after the end. */
static void test_blocked_before_anything_was_due(void)
{
	struct fx f;
	fx_start(&f, 1);
	CHECK_EQ_INT(send_all(&f, 0), 1);
	CHECK_EQ_INT(f.verdict, LOAD_WAIT); /* the 10 ms arrival is not due yet */
	load_done(&f.l, NULL, 55 * MS, true);
	CHECK_EQ_INT(send_all(&f, 55 * MS), 0);
	CHECK_EQ_INT(f.verdict, LOAD_EXHAUSTED);
	CHECK_EQ_INT(f.l.dropped, 4);
	fx_release(&f);
}

/* The same, freed before the end: the oldest held arrival goes at once. */
static void test_held_then_freed_before_the_end(void)
{
	struct fx f;
	fx_start(&f, 1);
	CHECK_EQ_INT(send_all(&f, 0), 1);
	CHECK_EQ_INT(send_all(&f, 25 * MS), 0);
	load_done(&f.l, NULL, 27 * MS, true);
	CHECK_EQ_INT(send_all(&f, 27 * MS), 1);
	CHECK_EQ_INT(f.last, 10 * MS);
	CHECK_EQ_INT(f.verdict, LOAD_WAIT);
	CHECK(!f.l.ended);
	fx_release(&f);
}

/* A worker that is merely late (nothing held by the ceiling) still sends,
 * after the end, every arrival scheduled before it. */
static void test_late_worker_catches_up(void)
{
	struct fx f;
	fx_start(&f, 10);
	CHECK_EQ_INT(send_all(&f, 55 * MS), 5); /* 0, 10, 20, 30, 40 ms */
	CHECK_EQ_INT(f.last, 40 * MS);
	CHECK_EQ_INT(f.verdict, LOAD_EXHAUSTED);
	CHECK_EQ_INT(f.l.dropped, 0);
	fx_release(&f);
}

/* The ceiling is still full at the end: what it holds is dropped. */
static void test_full_at_the_end(void)
{
	struct fx f;
	fx_start(&f, 1);
	CHECK_EQ_INT(send_all(&f, 0), 1);
	CHECK_EQ_INT(send_all(&f, 50 * MS), 0);
	CHECK_EQ_INT(f.verdict, LOAD_EXHAUSTED);
	CHECK_EQ_INT(f.l.dropped, 4);
	fx_release(&f);
}

/* A trace whose last entries are 1e12 ms in, replayed at a speedup of
 * 1e-6: 1e24 ns away. Each is due at start + HR_FAR_NS, not at an
 * overflowed (negative) time that would send it at once; so is the next
 * turn of a session. */
static void test_trace_far_future(void)
{
	static const char text[] =
	    "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n"
	    "{\"timestamp\": 1e12, \"input_length\": 1, \"output_length\": 1}\n"
	    "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"session_id\": 1}\n"
	    "{\"timestamp\": 1e12, \"input_length\": 1, \"output_length\": 1, \"session_id\": 1}\n";
	struct trace tr;
	struct trace_plan tp;
	struct share sh;
	char err[HR_ERRLEN];
	memset(&sh, 0, sizeof sh);
	sh.workers = 1;
	sh.speedup = 0.000001;
	sh.prof.mode = SPEC_LOAD_TRACE;
	sh.prof.req_id_stride = 1;
	if (!CHECK(trace_parse(text, sizeof text - 1, &tr, err) == 0))
		return;
	CHECK(trace_plan_build_from(&tp, &tr, &sh, err) == 0);
	struct theap h;
	theap_init(&h);
	struct load l;
	struct load_cfg cfg = {.ph = &sh.prof,
	                       .phase = HR_PHASE_PROFILING,
	                       .worker = 0,
	                       .workers = 1,
	                       .seed = 1,
	                       .tp = &tp,
	                       .heap = &h};
	load_init(&l, &cfg);
	int64_t start = 5 * MS;
	load_begin(&l, start);
	struct issue is, conv_is = {0};
	int sent = 0;
	while (load_next(&l, start, &is) == LOAD_SEND) {
		CHECK(is.intended_ns == start);
		if (is.conv)
			conv_is = is;
		sent++;
	}
	CHECK_EQ_INT(sent, 2); /* the two entries at 0 */
	CHECK(l.next_ns == start + HR_FAR_NS);
	CHECK(conv_is.conv != NULL);
	if (conv_is.conv) {
		load_done(&l, conv_is.conv, start + MS, true);
		CHECK(conv_is.conv->due_ns == start + HR_FAR_NS);
	}
	CHECK(load_next(&l, start + 2 * MS, &is) == LOAD_WAIT);
	load_release(&l);
	theap_release(&h);
	trace_plan_release(&tp);
}

/* The millionth arrival at the lowest rate is 1e12 s in: clamped too. */
static void test_sched_far_future(void)
{
	struct sched s;
	sched_init(&s, SCHED_CONSTANT, 0.000001, 1, 0, 1, 1);
	CHECK(sched_next(&s) == 0);
	CHECK(sched_next(&s) == 1000000 * 1000000000LL);
	s.k = 1000000;
	s.s = 1e12;
	CHECK(sched_next(&s) == HR_FAR_NS);
	CHECK(ns_of_s(NAN) == 0 && ns_of_s(-INFINITY) == -HR_FAR_NS);
	CHECK(ns_of_s(1.5e-9) == 2 && ns_of_s(-1e300) == -HR_FAR_NS);
}

/* load.batch: `size` arrivals at each batch time, the batches spaced by
 * the law at rate / size; jitter spreads a batch over [t, t + jitter) in
 * order; the mean rate stays the requested one. */
static void test_sched_batches(void)
{
	struct sched s;
	sched_init(&s, SCHED_CONSTANT, 4.0, 1, 0, 7, 4); /* 4/s in batches of 4: 1 s apart */
	sched_set_batch(&s, 4, 0);
	for (int b = 0; b < 5; b++)
		for (int j = 0; j < 4; j++)
			CHECK_EQ_INT(sched_next(&s), (long long)b * 1000000000LL);
	sched_init(&s, SCHED_CONSTANT, 4.0, 1, 0, 7, 4);
	sched_set_batch(&s, 4, 0.2);
	int64_t prev = -1;
	for (int b = 0; b < 50; b++)
		for (int j = 0; j < 4; j++) {
			int64_t t = sched_next(&s), lo = (int64_t)b * 1000000000LL;
			CHECK(t >= lo + j * 50000000LL && t < lo + (j + 1) * 50000000LL);
			CHECK(t >= prev);
			prev = t;
		}
	/* Poisson batches: 20000 batches of 5 at 10/s are 2/s, mean gap 0.5 s */
	sched_init(&s, SCHED_POISSON, 10.0, 1, 0, 3, 4);
	sched_set_batch(&s, 5, 0);
	int64_t first = sched_next(&s), last = first;
	for (int k = 1; k < 100000; k++) {
		int64_t t = sched_next(&s);
		CHECK(t >= last);
		if (k % 5)
			CHECK(t == last);
		last = t;
	}
	double mean_gap = (double)(last - first) / 1e9 / 19999;
	CHECK(fabs(mean_gap - 0.5) < 0.02);
	/* batch 1 is no batching: the plain process, arrival for arrival */
	struct sched a, b;
	sched_init(&a, SCHED_GAMMA, 3.0, 0.5, 2.0, 9, 4);
	sched_init(&b, SCHED_GAMMA, 3.0, 0.5, 2.0, 9, 4);
	sched_set_batch(&b, 1, 0.3);
	for (int k = 0; k < 1000; k++)
		CHECK(sched_next(&a) == sched_next(&b));
}

int main(void)
{
	test_sched_batches();
	test_held_then_freed_after_the_end();
	test_blocked_before_anything_was_due();
	test_held_then_freed_before_the_end();
	test_late_worker_catches_up();
	test_full_at_the_end();
	test_trace_far_future();
	test_sched_far_future();
	return tap_done();
}
