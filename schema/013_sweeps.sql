-- 013_sweeps.sql - sweeps and capacity searches (server/sweep.c,
-- docs/sweeps.md): one row per sweep, and the runs it queued, each at one
-- value of the sweep's variable. A sweep's curve and decisions are
-- recomputed from its runs' stored summaries; `result` keeps the final
-- answer once it has ended.

CREATE TABLE sweeps (
	id           INTEGER PRIMARY KEY,
	name         TEXT NOT NULL DEFAULT '',
	created_ms   INTEGER NOT NULL,      -- Unix ms
	finished_ms  INTEGER,
	state        TEXT NOT NULL CHECK (state IN
	             ('running', 'succeeded', 'failed', 'cancelled', 'client_bound')),
	params       TEXT NOT NULL,            -- the request, normalised (JSON)
	result       TEXT,                     -- the answer once ended (JSON)
	error        TEXT,                     -- why it failed or stopped
	submitted_by TEXT                      -- the token's name, NULL when open
);
CREATE INDEX sweeps_state ON sweeps (state, id);

CREATE TABLE sweep_runs (
	sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
	run_id   INTEGER NOT NULL,
	value    REAL NOT NULL,               -- the variable's value for this run
	seq      INTEGER NOT NULL,            -- order queued, 0..
	PRIMARY KEY (sweep_id, seq)
);
CREATE UNIQUE INDEX sweep_runs_run ON sweep_runs (run_id);
