-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index; at most cap rows are read (the caller shows "cap or more").
SELECT queue, status, minute, COUNT(*) AS n
FROM (
    SELECT TOP (%(cap)s) queue, status,
           DATEDIFF(SECOND, finished_at, SYSUTCDATETIME()) / 60 AS minute
    FROM [skiplock_jobs]
    WHERE status IN ('done', 'failed')
      AND finished_at >= DATEADD(SECOND, -%(window_s)s, SYSUTCDATETIME())
) AS r
GROUP BY queue, status, minute
