/* outbox.c - record batching and non-blocking delivery (see outbox.h). */
#include "outbox.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "hrlimits.h"
#include "proto.h"
#include "util.h"

/* room for "HRB" 1 and the count varint in front of the body */
#define BODY_MAX (HR_MAX_PROTO_MSG - 16)
#define WAIT_SLICE_MS 100

struct outbox_msg {
	struct outbox_msg *next;
	char *data;
	size_t len;
	uint32_t records;
};

void outbox_init(struct outbox *o, void *sock, void (*after_send)(void *ud), void *ud)
{
	memset(o, 0, sizeof *o);
	o->sock = sock;
	o->after_send = after_send;
	o->ud = ud;
	dynbuf_init(&o->body, BODY_MAX);
	dynbuf_init(&o->msg, HR_MAX_PROTO_MSG);
}

void outbox_release(struct outbox *o)
{
	while (o->head) {
		struct outbox_msg *m = o->head;
		o->head = m->next;
		free(m->data);
		free(m);
	}
	o->tail = NULL;
	o->pending_bytes = 0;
	dynbuf_release(&o->body);
	dynbuf_release(&o->msg);
}

/* An upper bound of a record's encoded size: every varint at most 10
 * bytes (25 fixed fields, the chunk count and deltas, the message length). */
static size_t record_bound(const struct hr_record *r)
{
	size_t ml = r->error_msg ? strlen(r->error_msg) : 0;
	if (ml > HR_MAX_ERROR_MSG)
		ml = HR_MAX_ERROR_MSG;
	return 32 * 10 + (size_t)r->n_chunks * 10 + ml;
}

/* 0 sent, 1 refused for now (EAGAIN), -1 socket error. */
static int try_send(struct outbox *o, const void *data, size_t len)
{
	if (proto_send(o->sock, NULL, PROTO_RECORDS, data, len, ZMQ_DONTWAIT) < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -1;
	o->batches_sent++;
	if (o->after_send)
		o->after_send(o->ud);
	return 0;
}

/* Sends queued batches in order while the socket takes them. */
static int pump(struct outbox *o)
{
	while (o->head) {
		struct outbox_msg *m = o->head;
		int rc = try_send(o, m->data, m->len);
		if (rc)
			return rc < 0 ? -1 : 0;
		o->records_sent += m->records;
		o->pending_bytes -= m->len;
		o->head = m->next;
		if (!o->head)
			o->tail = NULL;
		free(m->data);
		free(m);
	}
	return 0;
}

static void enqueue(struct outbox *o, uint32_t records)
{
	struct outbox_msg *m = xcalloc(1, sizeof *m);
	m->data = dynbuf_take(&o->msg, &m->len);
	m->records = records;
	if (o->tail)
		o->tail->next = m;
	else
		o->head = m;
	o->tail = m;
	o->pending_bytes += m->len;
}

/* Closes the open batch; sends it now if nothing queued is ahead of it. */
static int seal(struct outbox *o)
{
	if (o->count == 0)
		return 0;
	uint32_t n = o->count;
	record_batch_begin(&o->msg, n);
	if (dynbuf_add(&o->msg, o->body.data, o->body.len) < 0)
		xalloc_die(); /* BODY_MAX leaves room for the header */
	dynbuf_reset(&o->body);
	o->count = 0;
	if (!o->head) {
		int rc = try_send(o, o->msg.data, o->msg.len);
		if (rc == 0) {
			o->records_sent += n;
			return 0;
		}
		if (rc < 0)
			return -1;
	}
	enqueue(o, n);
	return 0;
}

static int term_pending(void)
{
	sigset_t s;
	if (sigpending(&s) < 0)
		return 0;
	return sigismember(&s, SIGTERM) == 1 || sigismember(&s, SIGINT) == 1;
}

/* Waits (bounded slices) until the socket may take a message. */
static void wait_writable(struct outbox *o, long ms)
{
	zmq_pollitem_t it = {.socket = o->sock, .events = ZMQ_POLLOUT};
	zmq_poll(&it, 1, ms);
}

int outbox_flush(struct outbox *o)
{
	if (pump(o) < 0 || seal(o) < 0)
		return -1;
	while (o->pending_bytes > OUTBOX_MAX_PENDING) {
		/* backpressure: the daemon is not taking records */
		if (term_pending())
			return -1;
		wait_writable(o, WAIT_SLICE_MS);
		if (pump(o) < 0)
			return -1;
	}
	return 0;
}

int outbox_add(struct outbox *o, const struct hr_record *r)
{
	int rc = 0;
	if (o->count &&
	    (o->count >= HR_MAX_RECORDS_PER_BATCH || o->body.len + record_bound(r) > BODY_MAX))
		rc = outbox_flush(o);
	record_encode(&o->body, r);
	o->count++;
	o->records_added++;
	return rc;
}

int outbox_flush_all(struct outbox *o, int64_t deadline_ns)
{
	if (pump(o) < 0 || seal(o) < 0)
		return -1;
	while (o->head) {
		int64_t left = deadline_ns - mono_ns();
		if (left <= 0)
			return -1;
		long ms = (long)(left / 1000000) + 1;
		wait_writable(o, ms < WAIT_SLICE_MS ? ms : WAIT_SLICE_MS);
		if (pump(o) < 0)
			return -1;
	}
	return 0;
}

uint64_t outbox_backlog_records(const struct outbox *o)
{
	return o->records_added - o->records_sent;
}

size_t outbox_backlog_bytes(const struct outbox *o)
{
	return o->pending_bytes + o->body.len;
}
