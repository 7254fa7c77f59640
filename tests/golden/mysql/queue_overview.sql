-- The active jobs of every queue: the active rows are claimable = 1, read from the claim
-- index (claimable, key_wait, ...), never a finished job. FORCE INDEX here and in
-- queue_running and live_leases: MariaDB 10.11 estimated a look-up of a VIRTUAL column's
-- index (this index as 0016 built it) at half the table and read the whole table instead
-- (seen with 500 active jobs among 50,000; MySQL 9.7 took the index).
SELECT queue,
       SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
       SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
       SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
       SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
       TIMESTAMPDIFF(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
           UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
FROM `skiplock_jobs` FORCE INDEX (`skiplock_jobs_ready`)
WHERE claimable = 1
GROUP BY queue
