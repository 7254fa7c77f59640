-- The handler stopped on a cancel request: fenced like every write after a claim.
UPDATE `skiplock_jobs`
SET status = 'cancelled', lease_until = NULL, last_error = %(error)s, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND (%(marked)s = 1 OR has_children IS NULL)
