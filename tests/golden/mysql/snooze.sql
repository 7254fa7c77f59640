-- The job back to pending, due in delay_ms, no error recorded. As release: the claim's
-- attempt stays (the fencing token) and max_attempts grows by one, so a snooze uses up no
-- attempt. A job snoozed max_snoozes times already is not matched: the dialect then fails
-- it (fenced, by fail).
UPDATE `skiplock_jobs`
SET status = 'pending', run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6)),
    lease_until = NULL, max_attempts = LEAST(2147483647, max_attempts + 1),
    snoozes = COALESCE(snoozes, 0) + 1
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s
  AND status = 'running'
  AND COALESCE(snoozes, 0) < %(max_snoozes)s
