-- The active jobs of every queue, from the claim index (claim_ready is 1 on the running
-- rows and the pending ones not waiting behind their key) and the key_wait index (the
-- waiting ones): together they hold the backlog, never the finished jobs. FORCE INDEX here
-- and in queue_running and live_leases: MariaDB 10.11 estimates a look-up of a VIRTUAL
-- column's index at half the table and read the whole table instead (seen with 500
-- active jobs among 50,000; MySQL 9.7 took the index).
SELECT queue,
       SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
       SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
       SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
       SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
       TIMESTAMPDIFF(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
           UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
FROM (SELECT queue, status, run_at, lease_until FROM `skiplock_jobs` FORCE INDEX (`skiplock_jobs_ready`)
      WHERE claim_ready = 1
      UNION ALL
      SELECT queue, status, run_at, lease_until FROM `skiplock_jobs` FORCE INDEX (`skiplock_jobs_key_wait`)
      WHERE key_waiting IS NOT NULL) AS a
GROUP BY queue
