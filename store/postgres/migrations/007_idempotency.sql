CREATE TABLE idempotency (
	scope TEXT NOT NULL,
	key TEXT NOT NULL,
	hash TEXT NOT NULL,
	status INTEGER NOT NULL,
	content_type TEXT NOT NULL,
	call_id TEXT NOT NULL,
	body BYTEA,
	running_until BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);
CREATE INDEX sessions_by_principal ON sessions (principal, created_at);
CREATE INDEX approvals_by_requester ON approvals (requested_by, status);
