-- 004_compact_records.sql - records as their key columns plus one compact
-- blob (the stored record format of server/runs.c) instead of 22 columns:
-- rows a third smaller, much cheaper to insert and to read back.
-- Existing records are converted by hr_record_pack(), a function the daemon
-- registers on its connection (server/runs.c); nothing is dropped before
-- every row has been copied, and the migration runs in one transaction.

ALTER TABLE records RENAME TO records_v1;

CREATE TABLE records (
	run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	worker      INTEGER NOT NULL,
	seq         INTEGER NOT NULL,         -- per-worker sequence
	data        BLOB NOT NULL,            -- everything else (server/runs.c)
	PRIMARY KEY (run_id, worker, seq)
) WITHOUT ROWID;

INSERT INTO records (run_id, worker, seq, data)
	SELECT run_id, worker, seq,
	       hr_record_pack(req_id, phase, session, turn, flags, http_status, error,
	                      error_msg, intended_ns, start_ns, headers_ns, first_output_ns,
	                      end_ns, done_ns, isl, osl, reasoning_tokens, isl_src, osl_src,
	                      chunks)
	FROM records_v1 ORDER BY run_id, worker, seq;

DROP TABLE records_v1;
