UPDATE "skiplock_jobs"
SET status = 'failed', lease_until = NULL, last_error = %(error)s, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children
