-- Only while still pending: a claim that took the job first leaves 0 rows (the dialect
-- then enqueues a new job). The claim skips the row (READPAST) while this holds its lock,
-- and then finds it due later.
UPDATE [skiplock_jobs]
SET payload = %(payload)s, headers = %(headers)s,
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))
WHERE id = %(id)s AND status = 'pending'
