-- Only while still pending: a claim that took the job first leaves 0 rows (the dialect
-- then enqueues a new job). The claim skips the row while this holds its lock, and then
-- finds it due later.
UPDATE `skiplock_jobs`
SET payload = %(payload)s, headers = %(headers)s,
    run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))
WHERE id = %(id)s AND status = 'pending'
