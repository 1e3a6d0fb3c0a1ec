-- The runtime a session's turns run on: '' for the host's own model loop
-- (native), else a harness (claude-code, codex, gemini, an ACP agent of
-- agent.yaml's harnesses), chosen when the session is created.
ALTER TABLE sessions ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
