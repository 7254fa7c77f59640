UPDATE j
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL, finished_at = NULL,
    max_attempts = CASE
        WHEN CAST(j.attempt AS bigint) + COALESCE(%(attempts)s, j.max_attempts) > 2147483647
        THEN 2147483647 ELSE j.attempt + COALESCE(%(attempts)s, j.max_attempts) END
FROM [skiplock_jobs] AS j
WHERE j.status = 'failed'
  AND (%(all_ids)s = 1 OR j.id IN (%(ids)s))
  AND (%(all_queues)s = 1 OR j.queue IN (%(queues)s))
  AND (j.dedupe_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM [skiplock_jobs] AS a
        WHERE a.dedupe_key = j.dedupe_key AND a.status IN ('pending', 'running')))
