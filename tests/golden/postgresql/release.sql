-- The job back to pending now. The claim's attempt stays (the fencing token never goes
-- back) and max_attempts grows by one, so a released claim is not counted as one of the
-- job's attempts, by a failure or by a lease that ends.
UPDATE "skiplock_jobs"
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts::bigint + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
