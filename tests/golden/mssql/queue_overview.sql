-- The active jobs of every queue, from the claim index (filtered on the pending and
-- running rows: it holds the backlog, never the finished jobs).
SELECT queue,
       SUM(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS pending,
       SUM(CASE WHEN status = 'pending' AND run_at > SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS scheduled,
       SUM(CASE WHEN status = 'running' AND lease_until >= SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS running,
       SUM(CASE WHEN status = 'running' AND lease_until < SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS expired,
       DATEDIFF_BIG(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN run_at END),
           SYSUTCDATETIME()) / 1000000.0 AS oldest_pending_age
FROM [skiplock_jobs]
WHERE status IN ('pending', 'running')
GROUP BY queue
