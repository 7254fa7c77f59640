-- In the prune batch's transaction: the table's running total of pruned jobs.
UPDATE [skiplock_jobs_counters] SET total = total + %(deleted)s, updated_at = SYSUTCDATETIME()
WHERE name = N'pruned'
