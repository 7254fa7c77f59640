-- Under the queue's lock, in a statement of its own (so it reads every claim committed
-- before the lock was granted): the queue's jobs that hold a live lease.
SELECT count(*) AS n FROM [skiplock_jobs]
WHERE queue = %(queue)s AND status = 'running' AND lease_until > SYSUTCDATETIME()
