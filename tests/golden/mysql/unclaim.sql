-- A claim whose COMMIT lost its connection may or may not have committed: each job it
-- returned is given back as release does, if the claim did commit. Then the row is still
-- running at that attempt with the lease's end the claim wrote (no worker holds it, so
-- nobody heartbeats it). Had the claim rolled back, another claim could take the row at
-- the same attempt, but not with the same lease's end, so the fence holds.
UPDATE `skiplock_jobs`
SET status = 'pending', run_at = UTC_TIMESTAMP(6), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND lease_until = %(lease_until)s
