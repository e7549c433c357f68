/* run.c - the request pool between the load model, libcurl and the outbox
 * (see run.h). */
#include "run.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static int add_to_loop(void *ud, CURL *easy)
{
	return loop_add(ud, easy);
}

static void activate(struct run *r, struct req *q)
{
	if (r->n_active == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->active = xrealloc(r->active, (size_t)r->cap * sizeof *r->active);
		r->idle = xrealloc(r->idle, (size_t)r->cap * sizeof *r->idle);
	}
	q->index = r->n_active;
	r->active[r->n_active++] = q;
}

static void deactivate(struct run *r, struct req *q)
{
	int i = q->index;
	struct req *last = r->active[--r->n_active];
	r->active[i] = last;
	last->index = i;
	q->index = -1;
}

/* The record of q is final: count it, ship it, recycle q. */
static void retire(struct run *r, struct req *q, int64_t now)
{
	deactivate(r, q);
	r->completed++;
	if (q->rec.error)
		r->errors++;
	if (outbox_add(r->ob, &q->rec) < 0)
		r->interrupted = true;
	load_done(&r->load, now);
	req_reset(q);
	r->idle[r->n_idle++] = q; /* idle has room: it grows with active */
}

static struct req *take_req(struct run *r)
{
	if (r->n_idle)
		return r->idle[--r->n_idle];
	struct req *q = req_new(&r->cfg);
	if (!q)
		xalloc_die();
	return q;
}

/* A request that never reached libcurl still gets a record. */
static void fail_early(struct run *r, struct req *q, const char *why)
{
	int64_t now = mono_ns() - r->t0;
	if (q->rec.start_ns == HR_NO_TIME)
		q->rec.start_ns = now;
	req_complete(q, CURLE_FAILED_INIT, now);
	q->rec.error = HR_ERR_TRANSPORT;
	free(q->rec.error_msg);
	q->rec.error_msg = xstrdup(why);
	retire(r, q, now);
}

static void send_one(struct run *r, int64_t intended_ns)
{
	struct req *q = take_req(r);
	uint64_t seq = r->sent++;
	uint64_t req_id = r->req_id_base + seq * r->req_id_stride;

	activate(r, q);
	if (req_prepare(q, seq, req_id, intended_ns) < 0) {
		fail_early(r, q, "cannot build the request body");
		return;
	}
	if (req_launch(q, add_to_loop, r->loop) < 0)
		fail_early(r, q, "curl_multi_add_handle failed");
}

static void on_done(void *ud, CURL *easy, CURLcode result)
{
	struct run *r = ud;
	char *p = NULL;
	int64_t now = mono_ns() - r->t0;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p);
	loop_remove(r->loop, easy);
	if (!p)
		return; /* not ours */
	struct req *q = (struct req *)p;
	req_complete(q, result, now);
	retire(r, q, now);
	run_pump(r);
}

int run_init(struct run *r, struct loop *loop, struct outbox *ob, const struct spec *spec,
             const struct share *sh, uint32_t worker, char *err)
{
	memset(r, 0, sizeof *r);
	if (req_cfg_init(&r->cfg, spec, worker, err) < 0)
		return -1;
	r->loop = loop;
	r->ob = ob;
	r->req_id_base = sh->req_id_base;
	r->req_id_stride = sh->req_id_stride;
	load_init(&r->load, sh->slots, sh->requests, sh->duration_s);
	loop_on_done(loop, on_done, r);
	return 0;
}

void run_release(struct run *r)
{
	for (int i = 0; i < r->n_active; i++) {
		loop_remove(r->loop, r->active[i]->easy);
		req_free(r->active[i]);
	}
	for (int i = 0; i < r->n_idle; i++)
		req_free(r->idle[i]);
	free(r->active);
	free(r->idle);
	load_release(&r->load);
	req_cfg_release(&r->cfg);
	loop_on_done(r->loop, NULL, NULL);
	memset(r, 0, sizeof *r);
}

void run_begin(struct run *r, int64_t t0)
{
	r->t0 = t0;
	r->cfg.t0 = t0;
	r->begun = true;
	run_pump(r);
}

void run_pump(struct run *r)
{
	if (!r->begun)
		return;
	for (;;) {
		int64_t intended, wake;
		int v = load_next(&r->load, mono_ns() - r->t0, &intended, &wake);
		if (v != LOAD_SEND)
			break; /* LOAD_WAIT: a completion (or, paced, a timer) calls again */
		send_one(r, intended);
	}
}

void run_cancel(struct run *r, const char *why)
{
	load_stop(&r->load);
	int64_t now = mono_ns() - r->t0;
	while (r->n_active) {
		struct req *q = r->active[r->n_active - 1];
		loop_remove(r->loop, q->easy);
		req_cancel(q, now, why);
		retire(r, q, now);
	}
}

bool run_finished(struct run *r)
{
	return r->begun && r->n_active == 0 && load_finished(&r->load, mono_ns() - r->t0);
}
