-- Under the queue's claim lock, in a statement of its own (so it reads every claim
-- committed before the lock was granted): the jobs claimed from the queue in the last
-- per_ms milliseconds (at most a week: DATEADD takes an int), and how long until the
-- oldest of those claims leaves the window (milliseconds; NULL when there is none); now:
-- this statement's time, from which a claim of jobs with a key rate starts their leases
-- (docs/control.md).
SELECT COALESCE(SUM(n), 0) AS used,
       DATEDIFF_BIG(MICROSECOND, SYSUTCDATETIME(), MIN(claimed_at)) / 1000.0 + %(per_ms)s
           AS wait_ms,
       SYSUTCDATETIME() AS now
FROM [skiplock_jobs_rates]
WHERE queue = %(queue)s AND claimed_at > DATEADD(MILLISECOND, -%(per_ms)s, SYSUTCDATETIME())
