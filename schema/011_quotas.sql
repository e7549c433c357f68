-- 011_quotas.sql - per-token quotas (server/auth.c, docs/security.md
-- "Quotas"): each NULL when the token has no such limit. Checked when the
-- token submits a run (POST /runs) or uploads a dataset (POST /datasets).

ALTER TABLE api_tokens ADD COLUMN max_rate REAL;          -- load.rate, requests/s
ALTER TABLE api_tokens ADD COLUMN max_concurrency INTEGER; -- load.concurrency / max_concurrency
ALTER TABLE api_tokens ADD COLUMN max_duration_s REAL;    -- load.duration_s
ALTER TABLE api_tokens ADD COLUMN max_requests INTEGER;   -- load.requests
ALTER TABLE api_tokens ADD COLUMN max_queued INTEGER;     -- the token's runs queued at once
ALTER TABLE api_tokens ADD COLUMN max_dataset_mb INTEGER; -- one dataset upload, MiB
