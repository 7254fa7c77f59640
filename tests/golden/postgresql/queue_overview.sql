-- The active jobs of every queue, from the claim index (a partial index on the running
-- rows and the pending ones not waiting behind their key) and the key_wait index (the
-- waiting ones): together they hold the backlog, never the finished jobs.
SELECT queue,
       count(*) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()) AS pending,
       count(*) FILTER (WHERE status = 'pending' AND run_at > statement_timestamp()) AS scheduled,
       count(*) FILTER (WHERE status = 'running' AND lease_until >= statement_timestamp()) AS running,
       count(*) FILTER (WHERE status = 'running' AND lease_until < statement_timestamp()) AS expired,
       EXTRACT(EPOCH FROM statement_timestamp()
           - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()))
           AS oldest_pending_age
FROM (SELECT queue, status, run_at, lease_until FROM "skiplock_jobs"
      WHERE status = 'running' OR (status = 'pending' AND key_wait IS NULL)
      UNION ALL
      SELECT queue, status, run_at, lease_until FROM "skiplock_jobs"
      WHERE key_wait AND status = 'pending') AS a
GROUP BY queue
