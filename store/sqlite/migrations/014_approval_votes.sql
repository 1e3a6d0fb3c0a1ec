-- The approvals of calls whose tool's approver policy needs several
-- (a quorum): one row per call and voter (the authenticated principal).
-- seq numbers a call's approvals in the order they were recorded (under
-- the call's row lock). original_input keeps the input asked for once an
-- approver edited it.
CREATE TABLE approval_votes (
	call_id TEXT NOT NULL,
	voter TEXT NOT NULL,
	by_name TEXT NOT NULL,
	edited INTEGER NOT NULL,
	at BIGINT NOT NULL,
	seq INTEGER NOT NULL,
	PRIMARY KEY (call_id, voter)
);
ALTER TABLE approvals ADD COLUMN original_input TEXT;
