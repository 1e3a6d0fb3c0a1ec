CREATE TABLE files (
	namespace TEXT NOT NULL,
	name TEXT NOT NULL,
	size BIGINT NOT NULL,
	content_type TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (namespace, name)
);
