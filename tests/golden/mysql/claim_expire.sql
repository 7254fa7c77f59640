-- Compare-and-set like claim_take: only a row still running at the attempt the pick saw,
-- with its lease still ended (its worker may have completed or heartbeated it meanwhile).
UPDATE `skiplock_jobs`
SET status = 'failed', lease_until = NULL, finished_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired: attempt ', attempt, ' of ', max_attempts,
                        ' did not finish before its lease ended (worker died or stalled)')
WHERE id IN (%(ids)s) AND (id, attempt) IN ({pairs})
  AND status = 'running' AND run_at <= UTC_TIMESTAMP(6)
