-- KV entries: store/sqlite's 003 in PostgreSQL types. Keys compare as bytes
-- (COLLATE "C"), as in SQLite, so that listings are in byte order whatever
-- the database's collation, and a prefix is a range of the primary key.
CREATE TABLE kv (
	namespace TEXT NOT NULL,
	key TEXT COLLATE "C" NOT NULL,
	value BYTEA NOT NULL,
	version BIGINT NOT NULL,
	expires_at BIGINT,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (namespace, key)
);
