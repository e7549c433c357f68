/* fuzz_proto.c - libFuzzer target for the worker protocol's message
 * reading (proto_recv in lib/proto.c) and the self-telemetry sample check
 * (csample_from_json in lib/csample.c).
 *
 * Input: byte 0 picks the direction (bit 0: 0 a worker's message read by
 * the daemon's ROUTER, 1 the daemon's read by a worker's DEALER) and a
 * quantile (bits 1-7). The rest is up to 8 frames, each a 2-byte little
 * endian length and its bytes, sent as one multipart message over a real
 * ZeroMQ inproc socket pair and read with proto_recv. Checked: proto_recv
 * accepts exactly the messages of api/protocol.md (two frames: version 2
 * and a known type, then a payload within the bound that is a JSON object
 * unless it is a record batch) with the sender's routing id, and refuses
 * every other with a message; either way it consumes the whole multipart
 * message (the next read finds nothing), so framing stays in step. Every
 * JSON payload is also fed to csample_from_json: a sample it accepts has
 * every field in its documented range, survives csample_to_json and
 * csample_from_json unchanged, and gives a lateness quantile that is 0,
 * a bucket edge or INT64_MAX, growing with the quantile. Once per process
 * (it is slow), a payload one byte over HR_MAX_PROTO_MSG is refused. Any
 * violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib tests/fuzz/fuzz_proto.c \
 *        lib/proto.c lib/csample.c lib/util.c -ljansson -lzmq
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "csample.h"
#include "fuzz.h"
#include "hrlimits.h"
#include "proto.h"
#include "record.h"
#include "util.h"

#define MAX_FRAMES 8

static void *router, *dealer;

static void setup(void)
{
	void *ctx = zmq_ctx_new();
	REQUIRE(ctx != NULL);
	router = zmq_socket(ctx, ZMQ_ROUTER);
	dealer = zmq_socket(ctx, ZMQ_DEALER);
	REQUIRE(router && dealer);
	proto_socket_defaults(router);
	proto_socket_defaults(dealer);
	int ms = 5000;
	zmq_setsockopt(router, ZMQ_RCVTIMEO, &ms, sizeof ms);
	zmq_setsockopt(dealer, ZMQ_RCVTIMEO, &ms, sizeof ms);
	REQUIRE(zmq_setsockopt(dealer, ZMQ_ROUTING_ID, "w0", 2) == 0);
	REQUIRE(zmq_bind(router, "inproc://fuzz_proto") == 0);
	REQUIRE(zmq_connect(dealer, "inproc://fuzz_proto") == 0);
	/* the ROUTER learns the DEALER's id from its first message */
	REQUIRE(zmq_send(dealer, "hi", 2, 0) == 2);
	char buf[8];
	REQUIRE(zmq_recv(router, buf, sizeof buf, 0) == 2); /* the id */
	REQUIRE(zmq_recv(router, buf, sizeof buf, 0) == 2);

	/* a payload over the bound is refused (and consumed) */
	char *big = calloc(1, HR_MAX_PROTO_MSG + 1);
	REQUIRE(big != NULL);
	unsigned char hdr[2] = {PROTO_VERSION, PROTO_RECORDS};
	REQUIRE(zmq_send(dealer, hdr, 2, ZMQ_SNDMORE) == 2);
	REQUIRE(zmq_send(dealer, big, HR_MAX_PROTO_MSG + 1, 0) == (int)HR_MAX_PROTO_MSG + 1);
	free(big);
	struct proto_msg m;
	char err[HR_ERRLEN];
	REQUIRE(proto_recv(router, 1, &m, 0, err) == -2);
	REQUIRE(strstr(err, "too large") != NULL);
	REQUIRE(proto_recv(router, 1, &m, ZMQ_DONTWAIT, err) == 0);
}

/* What proto_recv must decide about frames f[0..k) (after the routing id). */
static bool valid(const unsigned char *const *f, const size_t *len, int k, int *type)
{
	*type = 0;
	if (k != 2 || len[0] != 2 || f[0][0] != PROTO_VERSION || f[0][1] == 0 ||
	    f[0][1] >= PROTO__MAX)
		return false;
	*type = f[0][1];
	if (len[1] > HR_MAX_PROTO_MSG)
		return false;
	if (*type == PROTO_RECORDS)
		return true;
	json_t *j = json_loadb((const char *)f[1], len[1], JSON_REJECT_DUPLICATES, NULL);
	bool ok = json_is_object(j);
	json_decref(j);
	return ok;
}

static void check_sample(json_t *o, double q)
{
	struct csample s, s2;
	char err[HR_ERRLEN];
	err[0] = '\0';
	if (csample_from_json(o, &s, err) < 0) {
		REQUIRE(strncmp(err, "sample: ", 8) == 0);
		return;
	}
	const int64_t big = (int64_t)1 << 62;
	REQUIRE(s.t_ns >= -big && s.t_ns <= big);
	const int64_t v[] = {s.interval_ns,    s.cpu_ns,      s.busy_ns,     s.wakeups,
	                     s.late_max_ns,    s.in_flight,   s.queued,      s.queued_age_ns,
	                     s.record_backlog, s.conn_errors, s.port_errors, s.sent,
	                     s.completed};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		REQUIRE(v[i] >= 0 && v[i] <= big);
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		REQUIRE(s.late[b] >= 0 && s.late[b] <= big);
	REQUIRE(s.phase >= 0 && s.phase < HR_PHASE__COUNT);
	REQUIRE(s.interval_ns > 0 || (s.cpu_ns == 0 && s.busy_ns == 0));
	json_t *j = csample_to_json(&s);
	REQUIRE(csample_from_json(j, &s2, err) == 0);
	json_decref(j);
	REQUIRE(memcmp(&s, &s2, sizeof s) == 0);

	/* the lateness quantile: 0 for an empty histogram, else an edge */
	int64_t total = 0;
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		total |= s.late[b];
	int64_t lo = csample_late_quantile(s.late, q), hi = csample_late_quantile(s.late, 1.0);
	if (total == 0) {
		REQUIRE(lo == 0 && hi == 0);
		return;
	}
	REQUIRE(lo <= hi);
	bool edge = lo == INT64_MAX;
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS - 1; b++)
		edge |= lo == csample_late_edges_ns[b];
	REQUIRE(edge);
	REQUIRE(csample_late_bucket(s.late_max_ns) >= 0 &&
	        csample_late_bucket(s.late_max_ns) < CSAMPLE_LATE_BUCKETS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!router)
		setup();
	if (size < 1)
		return 0;
	bool to_worker = data[0] & 1;
	double q = (double)(data[0] >> 1) / 127.0;
	const unsigned char *f[MAX_FRAMES];
	size_t len[MAX_FRAMES];
	int k = 0;
	size_t i = 1;
	while (i < size && k < MAX_FRAMES) {
		size_t n = data[i];
		if (i + 1 < size)
			n |= (size_t)data[i + 1] << 8;
		i += 2;
		if (i > size)
			i = size;
		if (n > size - i)
			n = size - i;
		f[k] = data + i;
		len[k] = n;
		k++;
		i += n;
	}
	if (k == 0) { /* a message has a frame at least */
		f[0] = data;
		len[0] = 0;
		k = 1;
	}

	void *out = to_worker ? router : dealer, *in = to_worker ? dealer : router;
	if (to_worker)
		REQUIRE(zmq_send(out, "w0", 2, ZMQ_SNDMORE) == 2);
	for (int j = 0; j < k; j++)
		REQUIRE(zmq_send(out, f[j], len[j], j + 1 < k ? ZMQ_SNDMORE : 0) == (int)len[j]);

	struct proto_msg m;
	char err[HR_ERRLEN];
	err[0] = '\0';
	int type;
	bool want = valid(f, len, k, &type);
	int rc = proto_recv(in, !to_worker, &m, 0, err);
	if (want) {
		if (rc != 1)
			fprintf(stderr, "refused: %s\n", err);
		REQUIRE(rc == 1);
		REQUIRE(m.type == type);
		REQUIRE(m.len == len[1]);
		REQUIRE(m.data != NULL && ((char *)m.data)[m.len] == '\0');
		REQUIRE(m.len == 0 || memcmp(m.data, f[1], m.len) == 0);
		REQUIRE((m.json != NULL) == (type != PROTO_RECORDS));
		if (!to_worker)
			REQUIRE(strcmp(m.ident, "w0") == 0);
		if (m.json)
			check_sample(m.json, q);
		proto_msg_release(&m);
	} else {
		REQUIRE(rc == -2);
		REQUIRE(err[0] != '\0');
		REQUIRE(m.data == NULL && m.json == NULL);
	}
	/* the whole multipart message was consumed */
	struct proto_msg none;
	REQUIRE(proto_recv(in, !to_worker, &none, ZMQ_DONTWAIT, err) == 0);
	return 0;
}
