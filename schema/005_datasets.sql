-- 005_datasets.sql - uploaded datasets (lib/dataset.h, server/datasets.c,
-- docs/datasets.md). The bytes are kept once per content hash, in the file
-- DATA/datasets/<sha256>; a row describes one way of reading them (a format
-- and its options), so the same bytes uploaded again with the same format
-- and options find their row instead of adding one.

CREATE TABLE datasets (
	id          INTEGER PRIMARY KEY,
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
