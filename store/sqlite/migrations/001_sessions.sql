CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	channel TEXT NOT NULL,
	mode TEXT NOT NULL,
	principal TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	last_seq BIGINT NOT NULL,
	turn_id TEXT,
	lease_holder TEXT,
	lease_expires BIGINT,
	lease_token BIGINT NOT NULL
);
CREATE INDEX sessions_by_created ON sessions (created_at, id);
CREATE TABLE turns (
	session_id TEXT NOT NULL REFERENCES sessions (id),
	id TEXT NOT NULL,
	kind TEXT NOT NULL,
	status TEXT NOT NULL,
	reason TEXT NOT NULL,
	started_at BIGINT NOT NULL,
	ended_at BIGINT,
	PRIMARY KEY (session_id, id)
);
CREATE INDEX turns_by_status ON turns (status);
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions (id),
	seq BIGINT NOT NULL,
	turn_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	data TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (session_id, seq)
);
