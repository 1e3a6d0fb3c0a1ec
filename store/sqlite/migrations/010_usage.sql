-- What model calls consumed (store.Usage): a row per model.usage event,
-- written in the transaction that appends it, with its session's
-- principal and channel; and what budgets hold back for calls in progress.
CREATE TABLE model_calls (
	session_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	turn_id TEXT NOT NULL,
	principal TEXT NOT NULL,
	channel TEXT NOT NULL,
	provider TEXT NOT NULL,
	model TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	input_tokens BIGINT NOT NULL,
	output_tokens BIGINT NOT NULL,
	cache_read_tokens BIGINT NOT NULL,
	cache_write_tokens BIGINT NOT NULL,
	reasoning_tokens BIGINT NOT NULL,
	-- NULL: the model had no price.
	cost_micros BIGINT,
	PRIMARY KEY (session_id, seq)
);
CREATE INDEX model_calls_by_time ON model_calls (created_at);
CREATE INDEX model_calls_by_principal ON model_calls (principal, created_at);
CREATE TABLE usage_reservations (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	turn_id TEXT NOT NULL,
	principal TEXT NOT NULL,
	tokens BIGINT NOT NULL,
	cost_micros BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE INDEX usage_reservations_by_principal ON usage_reservations (principal, expires_at);
CREATE INDEX usage_reservations_by_session ON usage_reservations (session_id, turn_id);
