/* gen_records.c - writes a synthetic run of N streamed requests into a
 * headroom store, for the summary's memory benchmark (bench/summary_big.sh).
 *
 * usage: hr-bench-records DB RUN_ID N TOKENS [SEED]
 * Replaces the records of run RUN_ID (which must exist: the benchmark
 * makes it with a small real run) with N profiling records of TOKENS
 * streamed chunks each, in the stored form the daemon writes
 * (lib/reccodec.c): 16 workers, sends at 500/s with a little schedule lag,
 * log-normal time to first token (median 60 ms) and inter-chunk gaps
 * (median 12 ms), nanosecond times, 0.5% of requests failing with a 500.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "reccodec.h"
#include "record.h"
#include "rng.h"

#define WORKERS 16

static int exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "hr-bench-records: %s: %s\n", sql, msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: hr-bench-records DB RUN_ID N TOKENS [SEED]\n");
		return 2;
	}
	long long run_id = atoll(argv[2]), n = atoll(argv[3]);
	int tokens = atoi(argv[4]);
	uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
	if (run_id < 1 || n < 1 || tokens < 1 || tokens > 100000) {
		fprintf(stderr, "hr-bench-records: bad arguments\n");
		return 2;
	}
	sqlite3 *db;
	if (sqlite3_open(argv[1], &db) != SQLITE_OK) {
		fprintf(stderr, "hr-bench-records: cannot open %s\n", argv[1]);
		return 1;
	}
	char sql[256];
	snprintf(sql, sizeof sql, "DELETE FROM records WHERE run_id = %lld", run_id);
	if (exec(db, "PRAGMA journal_mode=WAL") < 0 || exec(db, "PRAGMA synchronous=OFF") < 0 ||
	    exec(db, sql) < 0)
		return 1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO records (run_id, worker, seq, data) VALUES (?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "hr-bench-records: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	int64_t *chunks = malloc((size_t)tokens * sizeof *chunks);
	struct hr_record r;
	record_init(&r);
	unsigned char *blob = NULL;
	size_t blob_cap = 0;
	long long seq[WORKERS] = {0};
	exec(db, "BEGIN");
	for (long long i = 0; i < n; i++) {
		memset(&r, 0, sizeof r);
		r.req_id = (uint64_t)i;
		r.worker = (uint32_t)(i % WORKERS);
		r.phase = HR_PHASE_PROFILING;
		r.isl_src = r.osl_src = HR_TOKSRC_CHUNKS;
		r.flags = HR_REC_STREAMED;
		r.intended_ns = i * 2000000LL; /* 500/s */
		r.start_ns = r.intended_ns + (int64_t)(rng_uniform(seed, 1, (uint64_t)i) * 200000);
		r.headers_ns = r.start_ns + 2000000 + (int64_t)(rng_uniform(seed, 2, (uint64_t)i) * 1e6);
		int fail = rng_uniform(seed, 3, (uint64_t)i) < 0.005;
		r.req_osl = tokens;
		r.usage_isl = r.usage_osl = r.tok_isl = r.tok_osl = -1;
		r.isl = 256;
		r.reasoning_tokens = -1;
		if (fail) {
			r.http_status = 500;
			r.error = HR_ERR_HTTP_5XX;
			r.first_output_ns = HR_NO_TIME;
			r.end_ns = r.done_ns = r.headers_ns;
			r.osl = -1;
			r.n_chunks = 0;
		} else {
			r.http_status = 200;
			int64_t t = r.start_ns +
				    (int64_t)(60e6 * exp(0.4 * rng_normal(seed, 4, (uint64_t)i)));
			for (int k = 0; k < tokens; k++) {
				chunks[k] = t;
				t += (int64_t)(12e6 * exp(0.3 * rng_normal(seed, 5,
									   (uint64_t)i * tokens + k)));
			}
			r.n_chunks = (uint32_t)tokens;
			r.chunk_ns = chunks;
			r.first_output_ns = chunks[0];
			r.end_ns = chunks[tokens - 1];
			r.done_ns = r.end_ns + 50000;
			r.osl = tokens;
		}
		size_t need = rec_bound(&r, 0);
		if (need > blob_cap) {
			blob_cap = need * 2;
			blob = realloc(blob, blob_cap);
		}
		unsigned char *end = rec_pack(blob, &r, 0);
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_int64(st, 2, r.worker);
		sqlite3_bind_int64(st, 3, seq[r.worker]++);
		sqlite3_bind_blob(st, 4, blob, (int)(end - blob), SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			fprintf(stderr, "hr-bench-records: insert: %s\n", sqlite3_errmsg(db));
			return 1;
		}
		sqlite3_reset(st);
		if (i % 100000 == 99999) {
			exec(db, "COMMIT");
			exec(db, "BEGIN");
			fprintf(stderr, "\r%lld records", i + 1);
		}
	}
	exec(db, "COMMIT");
	fprintf(stderr, "\r%lld records written\n", n);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(chunks);
	free(blob);
	return 0;
}
