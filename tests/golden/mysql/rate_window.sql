-- Under the queue's claim lock, in a statement of its own (READ COMMITTED: a fresh read
-- view, so it sees every claim committed before the lock was granted): the jobs claimed
-- from the queue in the last per_ms milliseconds, and how long until the oldest of those
-- claims leaves the window (milliseconds; NULL when there is none); now: this statement's
-- time, from which a claim of jobs with a key rate starts their leases (docs/control.md).
SELECT COALESCE(SUM(n), 0) AS used,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(claimed_at)) / 1000.0 + %(per_ms)s
           AS wait_ms,
       UTC_TIMESTAMP(6) AS now
FROM `skiplock_jobs_rates`
WHERE queue = %(queue)s
  AND claimed_at > TIMESTAMPADD(MICROSECOND, %(per_ms)s * -1000, UTC_TIMESTAMP(6))
