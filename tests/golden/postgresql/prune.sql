-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
-- A parent whose child has not finished stays (the child reads its result when claimed).
DELETE FROM "skiplock_jobs" WHERE id IN (
    SELECT id FROM "skiplock_jobs" AS f
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < statement_timestamp() - %(older_ms)s * interval '1 millisecond'
      AND NOT EXISTS (
        SELECT 1 FROM "skiplock_jobs_deps" AS d JOIN "skiplock_jobs" AS c ON c.id = d.child
        WHERE d.parent = f.id AND c.status IN ('waiting', 'pending', 'running'))
    LIMIT %(limit)s)
