-- 007_dataset_ids.sql - dataset ids are never reused (AUTOINCREMENT): a
-- deleted dataset's id stays the name of what finished runs used, so a
-- later upload must not take it. SQLite can only give a table that
-- property when it is created: the table is copied into a new one.

CREATE TABLE datasets_new (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	sha256      TEXT NOT NULL,        -- lowercase hex SHA-256 of the bytes: the file's name
	format      TEXT NOT NULL,        -- single_turn | multi_turn | random_pool | mooncake_trace | sharegpt
	options     TEXT NOT NULL,        -- JSON, canonical (ds_options_json): {} or sharegpt's filters
	name        TEXT,                 -- as uploaded; NULL when none was given
	entries     INTEGER NOT NULL,     -- requests (turns) it yields
	sessions    INTEGER NOT NULL,
	bytes       INTEGER NOT NULL,     -- size of the file
	created_ns  INTEGER NOT NULL,     -- wall clock, ns since the Unix epoch
	stats       TEXT NOT NULL,        -- JSON (dataset_stats_json)
	UNIQUE (sha256, format, options)
);

INSERT INTO datasets_new (id, sha256, format, options, name, entries, sessions, bytes,
                          created_ns, stats)
	SELECT id, sha256, format, options, name, entries, sessions, bytes, created_ns, stats
	FROM datasets;

DROP TABLE datasets;
ALTER TABLE datasets_new RENAME TO datasets;

-- ids used by runs already (a dataset deleted before this migration did
-- not exist) stay taken too
INSERT INTO sqlite_sequence (name, seq)
	SELECT 'datasets', max(coalesce((SELECT max(id) FROM datasets), 0),
	                       coalesce((SELECT max(CAST(json_extract(spec, '$.workload.dataset.id')
	                                                 AS INTEGER)) FROM runs), 0))
	WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'datasets');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(CAST(json_extract(spec,
	'$.workload.dataset.id') AS INTEGER)) FROM runs), 0)) WHERE name = 'datasets';
