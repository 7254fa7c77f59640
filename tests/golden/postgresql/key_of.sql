-- q.cancel(): the job's key, so that its lock is taken before the job's row.
SELECT order_key FROM "skiplock_jobs" WHERE id = %(id)s
