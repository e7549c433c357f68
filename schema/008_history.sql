-- 008_history.sql - what the run history needs to answer "did it get
-- worse?" quickly (docs/compare.md): a spec fingerprint, notes and pins,
-- repeat groups, labels as rows (indexed selectors), each run's headline
-- figures as rows (sorting, series and trends without parsing summaries),
-- the run's validity and gate outcome, and named baselines.
-- Existing runs are converted here: their fingerprint by hr_fingerprint()
-- (a function the daemon registers, server/history.c), their labels and
-- the figures of their stored summaries by SQLite's JSON functions.

-- Run ids are never reused, even after the newest run is deleted (an id in
-- a CI log must not come to name another run): the highest id ever given.
CREATE TABLE run_id_hwm (
	one   INTEGER PRIMARY KEY CHECK (one = 1),
	last  INTEGER NOT NULL
);
INSERT INTO run_id_hwm (one, last) SELECT 1, coalesce(max(id), 0) FROM runs;

CREATE TABLE run_groups (
	id          INTEGER PRIMARY KEY,
	name        TEXT NOT NULL DEFAULT '',
	count       INTEGER NOT NULL,
	cooldown_s  REAL NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL
);

ALTER TABLE runs ADD COLUMN fingerprint TEXT;
ALTER TABLE runs ADD COLUMN note TEXT;
ALTER TABLE runs ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN group_id INTEGER REFERENCES run_groups (id) ON DELETE SET NULL;
ALTER TABLE runs ADD COLUMN verdict TEXT;        -- the client verdict
ALTER TABLE runs ADD COLUMN valid INTEGER;       -- 1 valid, 0 invalid, NULL unknown
ALTER TABLE runs ADD COLUMN gates_passed INTEGER; -- 1, 0, NULL: no gates

UPDATE runs SET fingerprint = hr_fingerprint(spec);
UPDATE runs SET verdict = json_extract(summary, '$.client.verdict')
	WHERE summary IS NOT NULL AND json_valid(summary);
CREATE INDEX runs_fingerprint ON runs (fingerprint, id);
CREATE INDEX runs_group ON runs (group_id, id);
CREATE INDEX runs_created ON runs (created_at, id);

CREATE TABLE run_labels (
	run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key     TEXT NOT NULL,
	value   TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX run_labels_kv ON run_labels (key, value, run_id);

INSERT INTO run_labels (run_id, key, value)
	SELECT runs.id, j.key, j.value FROM runs, json_each(runs.labels) AS j
	WHERE json_valid(runs.labels) AND j.type = 'text';

-- One row per run and metric: the summary's statistics, and 95% intervals
-- of the mean and of each percentile (NULL where unknown).
CREATE TABLE run_metrics (
	run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	metric  TEXT NOT NULL,
	unit    TEXT NOT NULL DEFAULT '',
	count   INTEGER,
	avg REAL, min REAL, max REAL, std REAL,
	p1 REAL, p5 REAL, p10 REAL, p25 REAL, p50 REAL, p75 REAL, p90 REAL, p95 REAL, p99 REAL,
	avg_lo REAL, avg_hi REAL,
	p1_lo REAL, p1_hi REAL, p5_lo REAL, p5_hi REAL, p10_lo REAL, p10_hi REAL,
	p25_lo REAL, p25_hi REAL, p50_lo REAL, p50_hi REAL, p75_lo REAL, p75_hi REAL,
	p90_lo REAL, p90_hi REAL, p95_lo REAL, p95_hi REAL, p99_lo REAL, p99_hi REAL,
	PRIMARY KEY (run_id, metric)
) WITHOUT ROWID;
CREATE INDEX run_metrics_metric ON run_metrics (metric, run_id);

INSERT INTO run_metrics (run_id, metric, unit, count, avg, min, max, std,
                         p1, p5, p10, p25, p50, p75, p90, p95, p99)
	SELECT runs.id, m.key, coalesce(json_extract(m.value, '$.unit'), ''),
	       json_extract(m.value, '$.count'), json_extract(m.value, '$.avg'),
	       json_extract(m.value, '$.min'), json_extract(m.value, '$.max'),
	       json_extract(m.value, '$.std'), json_extract(m.value, '$.p1'),
	       json_extract(m.value, '$.p5'), json_extract(m.value, '$.p10'),
	       json_extract(m.value, '$.p25'), json_extract(m.value, '$.p50'),
	       json_extract(m.value, '$.p75'), json_extract(m.value, '$.p90'),
	       json_extract(m.value, '$.p95'), json_extract(m.value, '$.p99')
	FROM runs, json_each(runs.summary, '$.metrics') AS m
	WHERE runs.summary IS NOT NULL AND json_valid(runs.summary) AND m.type = 'object';

INSERT INTO run_metrics (run_id, metric, unit, count, avg)
	SELECT id, 'error_rate', 'fraction', json_extract(summary, '$.counts.requests'),
	       CAST(json_extract(summary, '$.counts.errors') AS REAL) /
	       json_extract(summary, '$.counts.requests')
	FROM runs
	WHERE summary IS NOT NULL AND json_valid(summary)
	  AND json_extract(summary, '$.counts.requests') > 0;

-- Named baselines: a run, a group of repeats, or a rule resolved when used
-- ("the latest valid succeeded run with these labels").
CREATE TABLE baselines (
	name        TEXT PRIMARY KEY,
	kind        TEXT NOT NULL CHECK (kind IN ('run', 'group', 'rule')),
	run_id      INTEGER REFERENCES runs (id) ON DELETE CASCADE,
	group_id    INTEGER REFERENCES run_groups (id) ON DELETE CASCADE,
	rule        TEXT,                     -- JSON: {labels{}, fingerprint, valid_only}
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
