-- 001_init.sql - first schema: runs, their workers, per-request records.
-- Times: *_at columns are Unix epoch milliseconds (wall clock);
-- *_ns columns in records are nanoseconds since the run's time zero.

CREATE TABLE runs (
	id          INTEGER PRIMARY KEY,
	name        TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL CHECK (state IN
	            ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
	spec        TEXT NOT NULL,            -- normalised run spec (JSON)
	labels      TEXT NOT NULL DEFAULT '{}',
	created_at  INTEGER NOT NULL,
	started_at  INTEGER,
	finished_at INTEGER,
	reason      TEXT,                     -- why a run failed / was cancelled
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	t0_wall_ns  INTEGER,                  -- wall clock at the run's time zero
	progress    TEXT,                     -- last progress counters (JSON)
	summary     TEXT                      -- summary JSON once finished
);
CREATE INDEX runs_state ON runs (state, id);

CREATE TABLE run_workers (
	run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	idx         INTEGER NOT NULL,
	pid         INTEGER,
	mono_anchor_ns INTEGER,               -- worker's (monotonic, wall) pair at hello
	wall_anchor_ns INTEGER,
	state       TEXT NOT NULL,            -- started, ready, done, failed
	exit_status INTEGER,
	detail      TEXT,
	PRIMARY KEY (run_id, idx)
);

CREATE TABLE records (
	run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	worker      INTEGER NOT NULL,
	seq         INTEGER NOT NULL,         -- per-worker sequence
	req_id      INTEGER NOT NULL,
	phase       INTEGER NOT NULL,         -- 0 warmup, 1 profiling
	session     INTEGER NOT NULL DEFAULT 0,
	turn        INTEGER NOT NULL DEFAULT 0,
	flags       INTEGER NOT NULL DEFAULT 0,
	http_status INTEGER NOT NULL,
	error       INTEGER NOT NULL,         -- enum hr_err (lib/record.h)
	error_msg   TEXT,
	intended_ns INTEGER,
	start_ns    INTEGER,
	headers_ns  INTEGER,
	first_output_ns INTEGER,
	end_ns      INTEGER,
	done_ns     INTEGER,
	isl         INTEGER,
	osl         INTEGER,
	reasoning_tokens INTEGER,
	isl_src     INTEGER NOT NULL,
	osl_src     INTEGER NOT NULL,
	n_chunks    INTEGER NOT NULL,
	chunks      BLOB,                     -- varint deltas, lib/record.h
	PRIMARY KEY (run_id, worker, seq)
) WITHOUT ROWID;
