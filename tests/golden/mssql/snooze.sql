-- The job back to pending, due in delay_ms, no error recorded. As release: the claim's
-- attempt stays (the fencing token) and max_attempts grows by one, so a snooze uses up no
-- attempt. A job snoozed max_snoozes times already is not matched: the dialect then fails
-- it (fenced, by fail).
UPDATE [skiplock_jobs]
SET status = 'pending',
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME())),
    lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END,
    snoozes = COALESCE(snoozes, 0) + 1
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
  AND COALESCE(snoozes, 0) < %(max_snoozes)s
