-- A session's latest context.compacted event (its seq; 0: never
-- compacted): a turn reads the session from there.
ALTER TABLE sessions ADD COLUMN compacted_seq BIGINT NOT NULL DEFAULT 0;
