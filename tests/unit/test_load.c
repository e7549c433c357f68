/* test_load.c - the worker's load model (worker/load.c) driven by hand:
 * what a paced run with a concurrency ceiling does at the end of its
 * duration, whatever order the completion and the end's timer come in. */
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

int main(void)
{
	test_held_then_freed_after_the_end();
	test_blocked_before_anything_was_due();
	test_held_then_freed_before_the_end();
	test_late_worker_catches_up();
	test_full_at_the_end();
	return tap_done();
}
