-- The last statement of a transaction that released waiting jobs: the table's count of
-- released jobs grows, which idle workers' probe (wake_probe) reads. Its row stays locked
-- until this transaction's COMMIT, so two releases committing together take turns only
-- for that. The row is made by the first release.
INSERT INTO `skiplock_jobs_counters` (name, total, updated_at)
VALUES ('released', %(n)s, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE total = total + %(n)s, updated_at = UTC_TIMESTAMP(6)
