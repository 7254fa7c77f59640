UPDATE [skiplock_jobs]
SET status = 'failed', lease_until = NULL, last_error = %(error)s,
    finished_at = SYSUTCDATETIME()
OUTPUT inserted.has_children
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
