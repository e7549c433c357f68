-- 012_imports.sql - runs read from other tools' result files (POST
-- /api/v1/imports; server/import.c, server/api_imports.c, docs/formats.md
-- "Imports"). An imported run is a row of runs like any other (its spec
-- describes the load the file states, its records and summary are
-- headroom's); this table says where it came from. The original file is
-- kept as DATA/imports/<sha256>.

CREATE TABLE run_imports (
	run_id       INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	producer     TEXT NOT NULL,            -- vllm, aiperf, or the producer the file names
	version      TEXT NOT NULL DEFAULT '', -- the producer's version, when the file says
	format       TEXT NOT NULL,            -- vllm, aiperf-json
	sha256       TEXT NOT NULL,            -- of the original file
	bytes        INTEGER NOT NULL,
	jsonl_sha256 TEXT,                     -- AIPerf's profile_export.jsonl, when given
	jsonl_bytes  INTEGER,
	records      INTEGER NOT NULL,         -- per-request records stored; 0: summary only
	layout       INTEGER NOT NULL DEFAULT 0, -- 1: start times laid out (vLLM keeps none)
	stated       TEXT NOT NULL DEFAULT '{}', -- the file's own figures (JSON)
	unmapped     TEXT NOT NULL DEFAULT '{}', -- members with no headroom counterpart (JSON)
	imported_at  INTEGER NOT NULL           -- Unix ms
);
