UPDATE [skiplock_jobs]
SET status = 'pending',
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME())),
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
