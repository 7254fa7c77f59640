-- Under the queue's claim lock, in a statement of its own (READ COMMITTED: it sees every
-- claim committed before the lock was granted): the jobs claimed from the queue in the
-- last per_ms milliseconds, and how long until the oldest of those claims leaves the
-- window (milliseconds; NULL when there is none); now: this statement's time, from which
-- a claim of jobs with a key rate starts their leases (docs/control.md).
SELECT COALESCE(sum(n), 0) AS used,
       EXTRACT(EPOCH FROM min(claimed_at) - statement_timestamp()) * 1000 + %(per_ms)s AS wait_ms,
       statement_timestamp() AS now
FROM "skiplock_jobs_rates"
WHERE queue = %(queue)s
  AND claimed_at > statement_timestamp() - %(per_ms)s * interval '1 millisecond'
