/* proto.h - the daemon <-> worker protocol over ZeroMQ (see api/protocol.md).
 *
 * The daemon binds one ROUTER socket per run; each worker connects a
 * DEALER whose routing id is "w<index>". Every message is two frames:
 *   frame 1: 2 bytes  [PROTO_VERSION][type]
 *   frame 2: payload  (UTF-8 JSON object for control messages, a record
 *            batch - record.h - for PROTO_RECORDS)
 * A ROUTER additionally sees the routing id as a leading frame.
 * Anything else (wrong version, unknown type, wrong frame count, oversize,
 * payload that is not a JSON object) is rejected by proto_recv.
 */
#ifndef HR_PROTO_H
#define HR_PROTO_H

#include <jansson.h>
#include <stddef.h>

#define PROTO_VERSION 2

enum proto_type {
	PROTO_HELLO = 1,     /* worker -> daemon: {index, pid, version, mono_ns, wall_ns} */
	PROTO_SCHEDULE = 2,  /* daemon -> worker: the worker's share of the run (JSON) */
	PROTO_READY = 3,     /* worker -> daemon: share accepted, ready to start */
	PROTO_START = 4,     /* daemon -> worker: {t0_mono_ns, t0_wall_ns} */
	PROTO_HEARTBEAT = 5, /* worker -> daemon: progress counters, every 250 ms */
	PROTO_RECORDS = 6,   /* worker -> daemon: a record batch (binary) */
	PROTO_STOP = 7,      /* daemon -> worker: {reason}: cancel in-flight, finish */
	PROTO_DONE = 8,      /* worker -> daemon: {sent, completed, records}; last message */
	PROTO_FAIL = 9,      /* worker -> daemon: {message}: fatal error, worker exits */
	PROTO_PHASE_DONE = 10, /* worker -> daemon: {phase, sent, completed}: warm-up done */
	PROTO_SAMPLE = 11,     /* worker -> daemon: self-telemetry, about once a second (csample.h) */
	PROTO_CLOCK = 12,      /* both ways: {seq, t1} -> {seq, t1, t2, t3}: a clock exchange
	                        * (clocksync.h), to workers whose HELLO said "clock": true */
	PROTO__MAX
};

const char *proto_type_name(int type);

struct proto_msg {
	int type;
	char ident[32]; /* ROUTER only: routing id, NUL-terminated */
	void *data;     /* owned payload copy, NUL-terminated */
	size_t len;
	json_t *json;   /* parsed payload for control messages (owned), else NULL */
};

/* Send a message; payload may be NULL/0. ident is the routing id when
 * sock is a ROUTER, NULL otherwise. Returns 0 or -1 (errno from zmq;
 * EAGAIN when flags has ZMQ_DONTWAIT and the queue is full). */
int proto_send(void *sock, const char *ident, int type, const void *payload, size_t len, int flags);
/* JSON payload; obj is borrowed. */
int proto_send_json(void *sock, const char *ident, int type, json_t *obj, int flags);

/* Receive one message. Returns 1 when a valid message was read into m,
 * 0 when nothing is waiting (ZMQ_DONTWAIT), -1 on a socket error, and -2
 * when a malformed message was read and discarded (reason in err). */
int proto_recv(void *sock, int is_router, struct proto_msg *m, int flags, char *err);
void proto_msg_release(struct proto_msg *m);

/* Common socket setup: linger 0, bounded queues. */
void proto_socket_defaults(void *sock);

#endif
