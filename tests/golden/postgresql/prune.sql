-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
DELETE FROM "skiplock_jobs" WHERE id IN (
    SELECT id FROM "skiplock_jobs"
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < statement_timestamp() - %(older_ms)s * interval '1 millisecond'
    LIMIT %(limit)s)
