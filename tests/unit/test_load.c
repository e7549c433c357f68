/* test_load.c - the worker's load model (worker/load.c) driven by hand:
 * what a paced run with a concurrency ceiling does at the end of its
 * duration, whatever order the completion and the end's timer come in. */
#include "../../worker/load.c"
#include "../../worker/dsplan.c"
#include "../../worker/timers.c"

#include "tap.h"

#define MS 1000000LL

/* 100/s constant arrivals for 50 ms with at most `ceiling` in flight. */
static void start_rate(struct load *l, struct share_phase *ph, struct theap *h, int ceiling)
{
	memset(ph, 0, sizeof *ph);
	ph->mode = SPEC_LOAD_RATE;
	ph->slots = ceiling;
	ph->req_id_stride = 1;
	ph->rate.law = SCHED_CONSTANT;
	ph->rate.rate = 100;
	ph->rate.duration_s = 0.05;
	theap_init(h);
	struct load_cfg cfg = {.ph = ph, .phase = HR_PHASE_PROFILING, .worker = 0, .workers = 1,
	                       .seed = 1, .heap = h};
	load_init(l, &cfg);
	load_begin(l, 0);
}

/* Sends everything load_next allows at now; returns how many. */
static int send_all(struct load *l, int64_t now, int64_t *last_intended, int *verdict)
{
	struct issue is;
	int n = 0, v;
	while ((v = load_next(l, now, &is)) == LOAD_SEND) { /* now in flight */
		*last_intended = is.intended_ns;
		n++;
	}
	*verdict = v;
	return n;
}

/* The slot frees after the end, before the end's timer was handled: the
 * arrivals it held back are dropped, not sent late. */
static void test_held_then_freed_after_the_end(void)
{
	struct load l;
	struct share_phase ph;
	struct theap h;
	int64_t last = -1;
	int v;
	start_rate(&l, &ph, &h, 1);
	CHECK_EQ_INT(send_all(&l, 0, &last, &v), 1);
	CHECK_EQ_INT(v, LOAD_WAIT);
	CHECK_EQ_INT(send_all(&l, 45 * MS, &last, &v), 0); /* four due, all held */
	CHECK_EQ_INT(v, LOAD_WAIT);
	load_done(&l, NULL, 55 * MS, true);
	CHECK_EQ_INT(send_all(&l, 55 * MS, &last, &v), 0);
	CHECK_EQ_INT(v, LOAD_EXHAUSTED);
	CHECK(l.ended);
	CHECK_EQ_INT(l.ended_at, 50 * MS);
	CHECK_EQ_INT(l.dropped, 4);
	load_release(&l);
	theap_release(&h);
}

/* The same, freed before the end: the oldest held arrival goes at once. */
static void test_held_then_freed_before_the_end(void)
{
	struct load l;
	struct share_phase ph;
	struct theap h;
	int64_t last = -1;
	int v;
	start_rate(&l, &ph, &h, 1);
	CHECK_EQ_INT(send_all(&l, 0, &last, &v), 1);
	CHECK_EQ_INT(send_all(&l, 25 * MS, &last, &v), 0);
	load_done(&l, NULL, 27 * MS, true);
	CHECK_EQ_INT(send_all(&l, 27 * MS, &last, &v), 1);
	CHECK_EQ_INT(last, 10 * MS);
	CHECK_EQ_INT(v, LOAD_WAIT);
	CHECK(!l.ended);
	load_release(&l);
	theap_release(&h);
}

/* A worker that is merely late (nothing held by the ceiling) still sends,
 * after the end, every arrival scheduled before it. */
static void test_late_worker_catches_up(void)
{
	struct load l;
	struct share_phase ph;
	struct theap h;
	int64_t last = -1;
	int v;
	start_rate(&l, &ph, &h, 10);
	CHECK_EQ_INT(send_all(&l, 55 * MS, &last, &v), 5); /* 0, 10, 20, 30, 40 ms */
	CHECK_EQ_INT(last, 40 * MS);
	CHECK_EQ_INT(v, LOAD_EXHAUSTED);
	CHECK_EQ_INT(l.dropped, 0);
	load_release(&l);
	theap_release(&h);
}

/* The ceiling is still full at the end: what it holds is dropped. */
static void test_full_at_the_end(void)
{
	struct load l;
	struct share_phase ph;
	struct theap h;
	int64_t last = -1;
	int v;
	start_rate(&l, &ph, &h, 1);
	CHECK_EQ_INT(send_all(&l, 0, &last, &v), 1);
	CHECK_EQ_INT(send_all(&l, 50 * MS, &last, &v), 0);
	CHECK_EQ_INT(v, LOAD_EXHAUSTED);
	CHECK_EQ_INT(l.dropped, 4);
	load_release(&l);
	theap_release(&h);
}

int main(void)
{
	test_held_then_freed_after_the_end();
	test_held_then_freed_before_the_end();
	test_late_worker_catches_up();
	test_full_at_the_end();
	return tap_done();
}
