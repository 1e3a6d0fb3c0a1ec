CREATE TABLE schedules (
	name TEXT PRIMARY KEY,
	spec TEXT NOT NULL,
	next_at BIGINT NOT NULL
);
CREATE TABLE schedule_runs (
	id TEXT PRIMARY KEY,
	schedule TEXT NOT NULL,
	tick BIGINT NOT NULL,
	manual INTEGER NOT NULL,
	status TEXT NOT NULL,
	host TEXT NOT NULL,
	started_at BIGINT NOT NULL,
	ended_at BIGINT,
	error TEXT NOT NULL,
	lease_until BIGINT NOT NULL
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule, started_at);
CREATE TABLE reminders (
	session_id TEXT NOT NULL,
	key TEXT NOT NULL,
	id TEXT NOT NULL UNIQUE,
	at BIGINT NOT NULL,
	message TEXT NOT NULL,
	set_at BIGINT NOT NULL,
	PRIMARY KEY (session_id, key)
);
-- DueReminders: the reminders due soonest.
CREATE INDEX reminders_by_at ON reminders (at);
