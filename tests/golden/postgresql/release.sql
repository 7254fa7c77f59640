UPDATE "skiplock_jobs"
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
