-- Calls parked for a person's decision: store/sqlite's 002 in PostgreSQL
-- types.
CREATE TABLE approvals (
	call_id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	turn_id TEXT NOT NULL,
	model_call_id TEXT NOT NULL,
	tool TEXT NOT NULL,
	input TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	requested_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	status TEXT NOT NULL,
	decided_by TEXT NOT NULL,
	decided_at BIGINT,
	reason TEXT NOT NULL,
	outcome TEXT,
	executor TEXT NOT NULL,
	executor_expires BIGINT
);
-- ExpireApprovals: the pending ones past their expiry.
CREATE INDEX approvals_by_status ON approvals (status, expires_at);
-- ListApprovals, oldest first.
CREATE INDEX approvals_by_requested ON approvals (requested_at, call_id);
-- OrphanedApprovals, every sweep: only the calls still without an outcome.
CREATE INDEX approvals_unfinished ON approvals (status, executor_expires) WHERE outcome IS NULL;
