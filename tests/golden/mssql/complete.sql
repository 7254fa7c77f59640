UPDATE [skiplock_jobs]
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = SYSUTCDATETIME()
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
