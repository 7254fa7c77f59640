-- DATEADD takes an int: subtract whole seconds, then the milliseconds left (no literal
-- percent sign: the drivers format parameters with it).
-- A parent whose child has not finished stays (the child reads its result when claimed).
DELETE TOP (%(limit)s) FROM [skiplock_jobs]
WHERE status IN (%(statuses)s)
  AND finished_at < DATEADD(millisecond, (%(older_ms)s / 1000) * 1000 - %(older_ms)s,
                    DATEADD(second, -(%(older_ms)s / 1000), SYSUTCDATETIME()))
  AND id NOT IN (
    SELECT d.parent FROM [skiplock_jobs_deps] AS d JOIN [skiplock_jobs] AS c ON c.id = d.child
    WHERE c.status IN ('waiting', 'pending', 'running'))
