-- 014_cards.sql - each run's credibility card (server/card.c, docs/card.md):
-- the client host, the server's identity as the target exposes it, the
-- load, warm-up and lengths sent and the client verdict, as one JSON
-- document scrubbed of credentials. Written when the run starts and again,
-- completed, when it ends; labels fill its gaps when it is shown.

CREATE TABLE run_cards (
	run_id     INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	card       TEXT NOT NULL,           -- JSON
	updated_ms INTEGER NOT NULL         -- Unix ms of the last write
);
