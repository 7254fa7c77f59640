-- After the claim, in its transaction: this statement starts after the claim's, so its
-- time is never earlier than the claim's (docs/control.md: why that keeps the limit).
INSERT INTO "skiplock_jobs_rates" (queue, claimed_at, n) VALUES (%(queue)s, statement_timestamp(), %(n)s)
