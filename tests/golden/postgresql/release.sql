UPDATE "skiplock_jobs"
SET status = 'pending', run_at = now(), lease_until = NULL
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
