UPDATE `skiplock_jobs`
SET status = 'pending', run_at = UTC_TIMESTAMP(6), lease_until = NULL
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
