-- The handler stopped on a cancel request: fenced like every write after a claim.
UPDATE "skiplock_jobs"
SET status = 'cancelled', lease_until = NULL, last_error = %(error)s, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children
