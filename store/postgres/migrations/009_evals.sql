-- Eval batches and their cases' results (store.Evals): store/sqlite's 008
-- in PostgreSQL types. A case is queued, then running in its session (held
-- by a lease while it runs), then completed or failed; once none of a
-- batch's cases is queued or running, the batch is completed with its
-- cases' mean score.
CREATE TABLE eval_batches (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	status TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	ended_at BIGINT,
	score DOUBLE PRECISION NOT NULL,
	passed INTEGER NOT NULL,
	total INTEGER NOT NULL,
	concurrency INTEGER NOT NULL DEFAULT 4
);
-- ListEvalBatches, newest first.
CREATE INDEX eval_batches_by_created ON eval_batches (created_at, id);
CREATE TABLE eval_cases (
	batch_id TEXT NOT NULL REFERENCES eval_batches (id),
	idx INTEGER NOT NULL,
	case_json TEXT NOT NULL,
	status TEXT NOT NULL,
	session_id TEXT NOT NULL,
	checks_json TEXT NOT NULL,
	score DOUBLE PRECISION NOT NULL,
	pass INTEGER NOT NULL,
	error TEXT NOT NULL,
	started_at BIGINT,
	ended_at BIGINT,
	lease_until BIGINT NOT NULL,
	PRIMARY KEY (batch_id, idx)
);
-- ExpiredEvalCases: the running cases whose hold ran out.
CREATE INDEX eval_cases_by_lease ON eval_cases (status, lease_until);
