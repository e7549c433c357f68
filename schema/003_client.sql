-- 003_client.sql - the load generator's own telemetry, and this host's
-- calibrated client ceiling.
--
-- client_samples: one row per worker sample (source 'w<index>', about once
-- a second) and per daemon sample (source 'daemon'). t_ns is nanoseconds
-- since the run's t0 (the records' timeline). Interval columns (cpu, busy,
-- wakeups, late, late_max_ns) cover the interval_ns before t_ns; the others
-- are the state at t_ns or totals since the run began. cpu and busy are
-- fractions of one core / of the interval.

CREATE TABLE client_samples (
	run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	source          TEXT NOT NULL,
	t_ns            INTEGER NOT NULL,
	interval_ns     INTEGER NOT NULL,
	phase           INTEGER,          -- 0 warm-up, 1 profiling (workers)
	cpu             REAL,             -- process CPU utilisation (1.0 = one core)
	busy            REAL,             -- event loop busy fraction (workers)
	wakeups         INTEGER,
	late            TEXT,             -- pacer lateness histogram, JSON array (workers)
	late_max_ns     INTEGER,
	in_flight       INTEGER,
	queued          INTEGER,          -- sends due but not made yet
	queued_age_ns   INTEGER,          -- age of the oldest of them
	record_backlog  INTEGER,          -- worker: records not yet sent; daemon: not yet stored
	conn_errors     INTEGER,
	port_errors     INTEGER,
	sent            INTEGER,
	completed       INTEGER
);
CREATE INDEX client_samples_run ON client_samples (run_id, source, t_ns);

-- A calibration: runs of one worker against a headroom-mock the daemon
-- starts itself, one per output length; result holds the measured
-- ceiling per output length once every run is over.
CREATE TABLE calibrations (
	id           INTEGER PRIMARY KEY,
	created_ns   INTEGER NOT NULL,
	finished_ns  INTEGER,
	state        TEXT NOT NULL,       -- running | succeeded | failed
	host         TEXT NOT NULL,
	params       TEXT NOT NULL,       -- JSON: the request as validated
	run_ids      TEXT NOT NULL,       -- JSON array of the runs it queued
	result       TEXT,                -- JSON
	error        TEXT
);
