-- Under the queue's lock, in a statement of its own (READ COMMITTED: a new snapshot, so it
-- sees every claim committed before the lock was granted): jobs holding a live lease.
SELECT count(*) AS n FROM "skiplock_jobs"
WHERE queue = %(queue)s AND status = 'running' AND lease_until > statement_timestamp()
