-- 006_telemetry_gpus.sql - what telemetry knows about a run beside its
-- samples: each GPU a source reported (its index, UUID and model name, which
-- the samples' gpu key alone does not carry), and the daemon's clock anchor
-- to compare the workers' (run_workers) with.

CREATE TABLE telemetry_gpus (
	run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	source  TEXT NOT NULL,            -- nvml | dcgm | server
	gpu     TEXT NOT NULL,            -- the key of its samples (telemetry.gpu): UUID, else index
	idx     INTEGER,                  -- device index (NVML's, DCGM's "gpu" label); NULL when unknown
	uuid    TEXT,                     -- NULL when unknown
	name    TEXT,                     -- model name (NVML's device name, DCGM's modelName); NULL when unknown
	PRIMARY KEY (run_id, source, gpu)
);

CREATE TABLE telemetry_clock (
	run_id  INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	mono_ns INTEGER NOT NULL,         -- the daemon's monotonic clock ...
	wall_ns INTEGER NOT NULL          -- ... and wall clock, read together when the collector started
);
