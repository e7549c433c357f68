/* agentproto.h - the daemon <-> headroom-agent link (docs/agents.md,
 * "Protocol"): one ZeroMQ DEALER (agent) to ROUTER (daemon) connection
 * with CURVE, carrying three kinds of multipart message, told apart by
 * their first frame:
 *   "c"  control:  frame 2 is a JSON object with a "type" member
 *                  (hello, welcome, refuse, hb, spawn, kill, exited, who,
 *                  fetch, missing)
 *   "w"  relayed worker message: frame 2 "RUN:INDEX" (decimal), frames 3
 *        and 4 the worker protocol's own two frames (proto.h), unchanged
 *   "b"  a chunk of a file by content hash (a dataset, a tokenizer): frame 2 JSON
 *        {sha256, offset, size, last}, frame 3 the bytes
 * Anything else is dropped. */
#ifndef HR_AGENTPROTO_H
#define HR_AGENTPROTO_H

#include <stddef.h>
#include <stdint.h>

#define AGENT_PROTO_VERSION 1
#define AGENT_HB_NS 500000000LL           /* heartbeats both ways */
#define AGENT_LOST_NS 3000000000LL        /* the daemon declares a silent agent lost */
#define AGENT_RELINK_NS 4000000000LL      /* an agent with no word this long connects anew */
#define AGENT_HELLO_EVERY_NS 1000000000LL /* an unanswered hello is repeated */
#define AGENT_NAME_MAX 63
#define AGENT_BLOB_CHUNK (1u << 20)
#define AGENT_MAX_FRAMES 4

/* "RUN:INDEX" of a relayed worker message; 0, or -1 when malformed. */
int agentproto_chan(const void *s, size_t n, int64_t *run, int *idx);
/* An agent's name or a label's key or value: 1 to max characters of
 * A-Z a-z 0-9 . _ - (a host name fits). */
int agentproto_name_ok(const char *s, size_t max);

#endif
