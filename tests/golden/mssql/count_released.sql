-- The last statement of a transaction that released waiting jobs: the table's count of
-- released jobs grows, which idle workers' probe (wake_probe) reads. Its row stays locked
-- until this transaction's COMMIT; the first release inserts it (UPDLOCK, HOLDLOCK: of two
-- first releases, the second waits for the first and then updates its row).
UPDATE [skiplock_jobs_counters] WITH (UPDLOCK, HOLDLOCK)
SET total = total + %(n)s, updated_at = SYSUTCDATETIME()
WHERE name = N'released';
IF @@ROWCOUNT = 0
INSERT INTO [skiplock_jobs_counters] (name, total, updated_at)
VALUES (N'released', %(n)s, SYSUTCDATETIME())
