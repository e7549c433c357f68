/* reccodec.h - the stored form of one record: the `data` blob of a row of
 * the records table (schema/004), written and read by server/runs.c.
 *
 * The key (run_id, worker, seq) lives in its own columns; everything else
 * of a struct hr_record is one blob:
 *   byte    format version (3; 2 has a byte for the mask below, with bits
 *           0-4 only, and 1 lacks the mask and its values)
 *   varint  req_id, session, turn
 *   bytes   phase, flags, error, isl_src, osl_src
 *   zigzag  http_status, isl, osl, reasoning_tokens
 *   varint  which of the ten further counts are known (bit 0 req_osl,
 *           1 usage_isl, 2 usage_osl, 3 tok_isl, 4 tok_osl, 5 images_in,
 *           6 audio_in, 7 media_bytes_in, 8 images_out, 9 bytes_out), then
 *           each known one as a varint (a record without media counts
 *           has the same bytes as in format 2 but for the version)
 *   byte    which of the six times are not HR_NO_TIME (bit 0 intended_ns,
 *           1 start_ns, 2 headers_ns, 3 first_output_ns, 4 end_ns, 5 done_ns)
 *   zigzag  start_ns if present, then each other present time minus start_ns
 *   varint  n_chunks, then zigzag deltas (the first from start_ns), as the
 *           chunk blob of lib/record.h
 *   varint  length of error_msg + 1 (0: none), then its bytes
 * Differences use wrap-around arithmetic, so every int64 value is exact.
 * One blob instead of 22 columns makes a row about a third smaller and
 * both the insert and the read-back far cheaper (docs/performance.md §2).
 *
 * Decoding is defensive (a database file is outside input too): any byte
 * string is either refused or decoded into a record that encodes again to
 * a blob that decodes to the same record (tests/fuzz/fuzz_storedrec.c).
 */
#ifndef HR_RECCODEC_H
#define HR_RECCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define REC_FORMAT 3 /* the version rec_pack writes; rec_unpack also reads 1 and 2 */

/* Upper bound of the encoded size of r whose error_msg is msg_len bytes
 * long (0 when it has none). */
size_t rec_bound(const struct hr_record *r, size_t msg_len);

/* Encodes r at p, which has rec_bound(r, msg_len) bytes; msg_len is
 * strlen(r->error_msg) (0 when NULL). Returns the end of the blob. Every
 * field but seq and worker is stored. */
unsigned char *rec_pack(unsigned char *p, const struct hr_record *r, size_t msg_len);

/* Where decoded records' variable parts live: grown as needed and reused
 * from one rec_unpack to the next. Zero-initialise; rec_mem_release. */
struct rec_mem {
	int64_t *chunks;
	size_t chunk_cap;
	char *msg;
	size_t msg_cap;
};

/* Decodes a stored blob of len bytes into r, except worker and seq (the
 * caller's, from the key). r->chunk_ns and r->error_msg point into mem and
 * stay valid until mem is used again or released. Returns 0, or -1 when
 * the blob is malformed (r is then partly written and not to be used). */
int rec_unpack(const void *blob, size_t len, struct hr_record *r, struct rec_mem *mem);

void rec_mem_release(struct rec_mem *mem);

#endif
