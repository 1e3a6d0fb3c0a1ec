-- Schedules and reminders (store.Timers): store/sqlite's 007 in PostgreSQL
-- types. A schedule's head is the tick job due next, its runs are kept for
-- listing (and held by a lease while running), a session's reminders are
-- one per key, each with an id of its own that its job is keyed by.
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
-- ListScheduleRuns, latest first; the running runs of a schedule.
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
