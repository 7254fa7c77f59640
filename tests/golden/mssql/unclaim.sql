-- A claim whose COMMIT lost its connection may or may not have committed: each job it
-- returned is given back as release does, if the claim did commit. Then the row is still
-- running at that attempt with the lease's end the claim wrote (no worker holds it, so
-- nobody heartbeats it). Had the claim rolled back, another claim could take the row at
-- the same attempt, but not with the same lease's end, so the fence holds.
UPDATE [skiplock_jobs]
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
  AND lease_until = CAST(%(lease_until)s AS DATETIME2(6))
