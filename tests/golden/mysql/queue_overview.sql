-- The active jobs of every queue, from the claim index (claimable is 1 on the pending and
-- running rows only: it holds the backlog, never the finished jobs).
SELECT queue,
       SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
       SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
       SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
       SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
       TIMESTAMPDIFF(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
           UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
FROM `skiplock_jobs`
WHERE claimable = 1
GROUP BY queue
