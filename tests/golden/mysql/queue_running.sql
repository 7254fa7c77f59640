-- Under the queue's lock, in a statement of its own (READ COMMITTED: a fresh read view, so
-- it sees every claim committed before the lock was granted): jobs holding a live lease.
SELECT count(*) AS n FROM `skiplock_jobs` FORCE INDEX (`skiplock_jobs_ready`)
WHERE claimable = 1 AND key_wait IS NULL AND queue = %(queue)s AND status = 'running'
  AND lease_until > UTC_TIMESTAMP(6)
