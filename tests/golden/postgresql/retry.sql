UPDATE "skiplock_jobs"
SET status = 'pending', run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond',
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
