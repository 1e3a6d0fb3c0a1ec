CREATE TABLE kv (
	namespace TEXT NOT NULL,
	key TEXT NOT NULL,
	value BLOB NOT NULL,
	version BIGINT NOT NULL,
	expires_at BIGINT,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (namespace, key)
);
