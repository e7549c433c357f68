-- 002_telemetry.sql - GPU and inference-server telemetry sampled during runs.
-- t_ns is wall-clock nanoseconds (the records' timeline is t0_wall_ns + t).

CREATE TABLE telemetry (
	run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	t_ns    INTEGER NOT NULL,
	source  TEXT NOT NULL,            -- nvml | dcgm | server
	series  TEXT NOT NULL,            -- concept (gpu.power_w, server.requests_running) or raw name
	gpu     TEXT NOT NULL DEFAULT '', -- GPU UUID (or index) for GPU series
	labels  TEXT NOT NULL DEFAULT '', -- other identifying labels, {k="v",...}
	kind    TEXT NOT NULL,            -- gauge | counter | histogram
	value   REAL,                     -- histograms: observation count
	detail  TEXT                      -- histograms: JSON {"sum", "buckets": [[le, count], ...]}
);
CREATE INDEX telemetry_run ON telemetry (run_id, source, series, gpu, labels, t_ns);

CREATE TABLE telemetry_sources (
	run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	source  TEXT NOT NULL,
	target  TEXT NOT NULL,            -- URL, or the NVML library
	status  TEXT NOT NULL,            -- ok | unavailable
	detail  TEXT,                     -- why it is unavailable, or the last error
	samples INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, source, target)
);
