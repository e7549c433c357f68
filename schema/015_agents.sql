-- 015_agents.sql - enrolled load-host agents (server/agents.c,
-- docs/agents.md): each one a name, the Z85 CURVE public key its
-- connections authenticate with (several agent processes may share it)
-- and the labels a run's placement selects by. A revoked agent's row is
-- deleted: its key is refused from then on.

CREATE TABLE agents (
	name        TEXT PRIMARY KEY,
	public_key  TEXT NOT NULL UNIQUE,  -- Z85, 40 characters
	labels      TEXT NOT NULL,         -- JSON object of strings
	enrolled_ms INTEGER NOT NULL       -- Unix ms
);
