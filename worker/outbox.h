/* outbox.h - records on their way to the daemon: batching and sending.
 *
 * A finished request's record is encoded at once (record_encode) into the
 * batch being filled, so the request's buffers can be reused right away. A
 * batch is sealed ("HRB" 1 count records) and sent as PROTO_RECORDS when it
 * holds HR_MAX_RECORDS_PER_BATCH records, when the next record might not
 * fit in HR_MAX_PROTO_MSG, or when outbox_flush is called (the worker's
 * tick does so well within HR_RECORD_BATCH_FLUSH_NS).
 *
 * Sends never block while the socket takes them (ZMQ_DONTWAIT). A sealed
 * batch the socket refuses (EAGAIN) waits in a queue and is retried at the
 * next flush, in order. When the queue reaches OUTBOX_MAX_PENDING bytes the
 * outbox blocks until the socket takes data again: backpressure on the
 * whole worker rather than unbounded memory (docs/worker.md).
 *
 * After each message handed to ZeroMQ, the after_send hook runs (the worker
 * drains its socket there: ZMQ_FD is edge-triggered and a send can swallow
 * the readable edge).
 *
 * Thread affinity: the loop's thread, as for the socket.
 */
#ifndef HR_WORKER_OUTBOX_H
#define HR_WORKER_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "record.h"

#define OUTBOX_MAX_PENDING (64u << 20) /* sealed bytes waiting before sends block */

struct outbox_msg;

struct outbox {
	void *sock;                     /* borrowed ZeroMQ DEALER */
	struct dynbuf body;             /* encoded records of the open batch */
	uint32_t count;                 /* records in body */
	struct dynbuf msg;              /* scratch: a sealed batch */
	struct outbox_msg *head, *tail; /* sealed, refused by the socket */
	size_t pending_bytes;
	uint64_t records_added, records_sent, batches_sent;
	void (*after_send)(void *ud);
	void *ud;
};

void outbox_init(struct outbox *o, void *sock, void (*after_send)(void *ud), void *ud);
void outbox_release(struct outbox *o);

/* Encodes r (borrowed) into the open batch; may seal and send. Returns 0,
 * or -1 when a blocking send was interrupted (see outbox_flush). */
int outbox_add(struct outbox *o, const struct hr_record *r);
/* Seals the open batch and sends what the socket takes. Blocks while the
 * queue is over OUTBOX_MAX_PENDING. Returns 0, or -1 when that blocking
 * wait was interrupted by SIGTERM/SIGINT becoming pending, or the socket
 * failed. */
int outbox_flush(struct outbox *o);
/* Seals and sends everything, waiting up to deadline_ns (absolute
 * monotonic). Returns 0, or -1 when something could not be sent. */
int outbox_flush_all(struct outbox *o, int64_t deadline_ns);

/* Records and bytes not yet handed to ZeroMQ (the record-pipeline backlog). */
uint64_t outbox_backlog_records(const struct outbox *o);
size_t outbox_backlog_bytes(const struct outbox *o);

#endif
