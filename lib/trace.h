/* trace.h - Mooncake-style request traces (JSONL) for replay.
 *
 * One JSON object per line:
 *   {"timestamp": 1234.5,        ms since the trace's start (required, 0..1e12)
 *    "input_length": 512,        prompt tokens (required, >= 1)
 *    "output_length": 128,       tokens to generate (required, >= 1)
 *    "hash_ids": [1, 2, 3],      prefix blocks shared between requests (optional)
 *    "session_id": "abc"}        turns of one conversation (optional; string or integer)
 * Blank lines are skipped, other fields ignored. Entries are kept in
 * timestamp order (stable). Errors name the line: "line 12: ...".
 */
#ifndef HR_TRACE_H
#define HR_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct trace_entry {
	double t_ms;
	int32_t isl, osl;
	uint32_t n_hash;
	uint64_t *hash_ids; /* owned, NULL when n_hash == 0 */
	char *session;      /* owned, NULL when the line has no session_id */
	uint32_t line;      /* 1-based line number in the text */
};

struct trace {
	struct trace_entry *e; /* owned */
	size_t n;
};

/* Returns 0 and fills out (trace_release), or -1 with "line N: ..." in err. */
int trace_parse(const char *text, size_t len, struct trace *out, char *err);
void trace_release(struct trace *t);
/* FNV-1a of a session id: decides which worker owns the session. */
uint64_t trace_session_hash(const char *session);

#endif
