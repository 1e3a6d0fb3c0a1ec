-- The principal who ran a batch (store.Evals.PrincipalEvals): store/sqlite's
-- 009. Eval sessions count against its quota, and it runs a bounded
-- number of batches at once.
ALTER TABLE eval_batches ADD COLUMN principal TEXT NOT NULL DEFAULT '';
CREATE INDEX eval_batches_by_principal ON eval_batches (principal, status);
