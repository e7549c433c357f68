-- 016_client_bursts.sql - the workers' burst evidence beside their other
-- self-telemetry (docs/client.md, "Bursts"): per sample, how late stream
-- reads were stamped after the event loop could first have seen their
-- socket ready (read_lag: counts in the pacer lateness buckets, JSON array;
-- read_lag_max_ns: the largest), and the 100 ms windows of the interval by
-- the loop's busy fraction in tenths (busy_windows: JSON array of 10
-- counts); the same reads by their kernel lag, the stamp minus the kernel's
-- receive time of the newest data they brought (kernel_lag: JSON array in
-- the read_lag buckets; kernel_lag_max_ns). NULL for the daemon's samples
-- and for samples stored before.
ALTER TABLE client_samples ADD COLUMN read_lag TEXT;
ALTER TABLE client_samples ADD COLUMN read_lag_max_ns INTEGER;
ALTER TABLE client_samples ADD COLUMN busy_windows TEXT;
ALTER TABLE client_samples ADD COLUMN kernel_lag TEXT;
ALTER TABLE client_samples ADD COLUMN kernel_lag_max_ns INTEGER;
