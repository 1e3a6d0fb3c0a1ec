-- File metadata: store/sqlite's 004 in PostgreSQL types, names in byte
-- order (COLLATE "C") as KV keys are.
CREATE TABLE files (
	namespace TEXT NOT NULL,
	name TEXT COLLATE "C" NOT NULL,
	size BIGINT NOT NULL,
	content_type TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (namespace, name)
);
