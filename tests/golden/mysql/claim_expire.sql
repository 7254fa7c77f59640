UPDATE `skiplock_jobs`
SET status = 'failed', lease_until = NULL, finished_at = UTC_TIMESTAMP(6),
    last_error = CONCAT('lease expired: attempt ', attempt, ' of ', max_attempts,
                        ' did not finish before its lease ended (worker died or stalled)')
WHERE id IN (%(ids)s)
