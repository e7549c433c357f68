/* proto.c - framing of daemon <-> worker messages over ZeroMQ (proto.h). */
#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "hrlimits.h"
#include "util.h"

static const char *const type_names[PROTO__MAX] = {
	[PROTO_HELLO] = "hello",	 [PROTO_SCHEDULE] = "schedule", [PROTO_READY] = "ready",
	[PROTO_START] = "start",	 [PROTO_HEARTBEAT] = "heartbeat",
	[PROTO_RECORDS] = "records", [PROTO_STOP] = "stop",		[PROTO_DONE] = "done",
	[PROTO_FAIL] = "fail",	 [PROTO_PHASE_DONE] = "phase_done",
	[PROTO_SAMPLE] = "sample", [PROTO_CLOCK] = "clock",
};

const char *proto_type_name(int type)
{
	return type > 0 && type < PROTO__MAX ? type_names[type] : "?";
}

void proto_socket_defaults(void *sock)
{
	int zero = 0, hwm = HR_ZMQ_HWM;
	int64_t maxmsg = HR_MAX_PROTO_MSG + 64;
	zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
	zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
	zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
	zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
}

int proto_send(void *sock, const char *ident, int type, const void *payload, size_t len, int flags)
{
	unsigned char hdr[2] = {PROTO_VERSION, (unsigned char)type};
	if (ident && zmq_send(sock, ident, strlen(ident), ZMQ_SNDMORE | flags) < 0)
		return -1;
	if (zmq_send(sock, hdr, 2, ZMQ_SNDMORE | flags) < 0)
		return -1;
	if (zmq_send(sock, payload ? payload : "", len, flags) < 0)
		return -1;
	return 0;
}

int proto_send_json(void *sock, const char *ident, int type, json_t *obj, int flags)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	if (!s)
		xalloc_die();
	int rc = proto_send(sock, ident, type, s, strlen(s), flags);
	free(s);
	return rc;
}

/* Discards the remaining frames of a multipart message. */
static void drain(void *sock)
{
	int more;
	size_t sz = sizeof more;
	while (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz) == 0 && more) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, 0) < 0) {
			zmq_msg_close(&m);
			return;
		}
		zmq_msg_close(&m);
	}
}

static int has_more(void *sock)
{
	int more = 0;
	size_t sz = sizeof more;
	zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz);
	return more;
}

int proto_recv(void *sock, int is_router, struct proto_msg *m, int flags, char *err)
{
	zmq_msg_t f;
	memset(m, 0, sizeof *m);
	zmq_msg_init(&f);
	if (zmq_msg_recv(&f, sock, flags) < 0) {
		zmq_msg_close(&f);
		return errno == EAGAIN ? 0 : -1;
	}
	if (is_router) {
		size_t n = zmq_msg_size(&f);
		if (n >= sizeof m->ident)
			n = sizeof m->ident - 1;
		memcpy(m->ident, zmq_msg_data(&f), n);
		m->ident[n] = '\0';
		zmq_msg_close(&f);
		if (!has_more(sock))
			return errf(err, "message from '%s' has no body", m->ident) - 1;
		zmq_msg_init(&f);
		if (zmq_msg_recv(&f, sock, 0) < 0) {
			zmq_msg_close(&f);
			return -1;
		}
	}
	const unsigned char *h = zmq_msg_data(&f);
	int ok = zmq_msg_size(&f) == 2 && h[0] == PROTO_VERSION && h[1] > 0 && h[1] < PROTO__MAX;
	int ver = zmq_msg_size(&f) >= 1 ? h[0] : -1;
	m->type = ok ? h[1] : 0;
	zmq_msg_close(&f);
	if (!ok) {
		drain(sock);
		return errf(err, "bad header (protocol version %d, want %d)", ver, PROTO_VERSION) - 1;
	}
	if (!has_more(sock))
		return errf(err, "%s message without payload", proto_type_name(m->type)) - 1;
	zmq_msg_init(&f);
	if (zmq_msg_recv(&f, sock, 0) < 0) {
		zmq_msg_close(&f);
		return -1;
	}
	if (has_more(sock)) {
		zmq_msg_close(&f);
		drain(sock);
		return errf(err, "%s message has extra frames", proto_type_name(m->type)) - 1;
	}
	m->len = zmq_msg_size(&f);
	if (m->len > HR_MAX_PROTO_MSG) {
		zmq_msg_close(&f);
		return errf(err, "%s message too large", proto_type_name(m->type)) - 1;
	}
	m->data = xmalloc(m->len + 1);
	memcpy(m->data, zmq_msg_data(&f), m->len);
	((char *)m->data)[m->len] = '\0';
	zmq_msg_close(&f);
	if (m->type != PROTO_RECORDS) {
		json_error_t je;
		m->json = json_loadb(m->data, m->len, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(m->json)) {
			proto_msg_release(m);
			return errf(err, "payload is not a JSON object: %s", je.text) - 1;
		}
	}
	return 1;
}

void proto_msg_release(struct proto_msg *m)
{
	free(m->data);
	if (m->json)
		json_decref(m->json);
	m->data = NULL;
	m->json = NULL;
}
