-- The audit log: append-only, each entry carrying the hash of the one
-- before it (api.AuditEntry.ComputeHash). audit_head is its last entry,
-- in one row that every append locks and moves on.
CREATE TABLE audit (
	seq BIGINT PRIMARY KEY,
	at BIGINT NOT NULL,
	kind TEXT NOT NULL,
	principal TEXT NOT NULL,
	subject TEXT NOT NULL,
	detail TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	signer TEXT NOT NULL,
	sig TEXT NOT NULL
);
CREATE TABLE audit_head (
	id INTEGER PRIMARY KEY,
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');
