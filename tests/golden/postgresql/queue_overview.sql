-- The active jobs of every queue, from the claim index (a partial index on the pending and
-- running rows: it holds the backlog, never the finished jobs).
SELECT queue,
       count(*) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()) AS pending,
       count(*) FILTER (WHERE status = 'pending' AND run_at > statement_timestamp()) AS scheduled,
       count(*) FILTER (WHERE status = 'running' AND lease_until >= statement_timestamp()) AS running,
       count(*) FILTER (WHERE status = 'running' AND lease_until < statement_timestamp()) AS expired,
       EXTRACT(EPOCH FROM statement_timestamp()
           - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()))
           AS oldest_pending_age
FROM "skiplock_jobs"
WHERE status IN ('pending', 'running')
GROUP BY queue
