-- DATEADD takes an int: subtract whole seconds, then the milliseconds left (no literal
-- percent sign: the drivers format parameters with it).
DELETE TOP (%(limit)s) FROM [skiplock_jobs]
WHERE status IN (%(statuses)s)
  AND finished_at < DATEADD(millisecond, (%(older_ms)s / 1000) * 1000 - %(older_ms)s,
                    DATEADD(second, -(%(older_ms)s / 1000), SYSUTCDATETIME()))
