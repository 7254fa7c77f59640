-- The job back to pending now. The claim's attempt stays (the fencing token never goes
-- back) and max_attempts grows by one, so a released claim is not counted as one of the
-- job's attempts, by a failure or by a lease that ends.
UPDATE [skiplock_jobs]
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
