-- API keys: the record of each key and the SHA-256 of its secret, never
-- the secret. roles holds role names joined by commas.
CREATE TABLE api_keys (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	roles TEXT NOT NULL,
	hash BYTEA NOT NULL,
	created_at BIGINT NOT NULL,
	last_used_at BIGINT,
	expires_at BIGINT,
	revoked_at BIGINT
);
