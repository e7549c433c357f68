-- 009_auth.sql - identities and roles (server/auth.c, docs/security.md):
-- API tokens, stored only as the SHA-256 of the token (the token itself
-- is shown once, when it is made, and never stored); the audit log of
-- every write made through the API; who submitted and who cancelled each
-- run (a token's name, or 'local' on an open loopback daemon).

CREATE TABLE api_tokens (
	id            INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
	name          TEXT NOT NULL UNIQUE,
	role          TEXT NOT NULL CHECK (role IN ('read', 'submit', 'admin')),
	hash          TEXT NOT NULL UNIQUE,              -- lowercase hex SHA-256 of the token
	created_at    INTEGER NOT NULL,                  -- ms since the epoch
	revoked_at    INTEGER,
	last_used_at  INTEGER
);

CREATE TABLE audit_log (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	at      INTEGER NOT NULL,  -- ms since the epoch
	who     TEXT NOT NULL,     -- token name, or 'local'
	method  TEXT NOT NULL,
	path    TEXT NOT NULL,     -- without the query
	status  INTEGER NOT NULL,  -- the HTTP status answered (0: none)
	detail  TEXT
);

ALTER TABLE runs ADD COLUMN submitted_by TEXT;
ALTER TABLE runs ADD COLUMN cancelled_by TEXT;
