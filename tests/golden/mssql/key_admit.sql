-- Rate limits per key (key_rate): the jobs of one key this claim admits, under the key's
-- lock, after rate_window counted the key's window: their leases start at that count's
-- time (bound: rate_window's now plus the lease), so a job's start is never earlier than
-- the count that admitted it and never later than the rate_record that logs it
-- (docs/control.md: why that keeps the limit). Fenced by this claim's token.
UPDATE [skiplock_jobs]
SET lease_until = CAST(%(lease_until)s AS DATETIME2(6)),
    run_at = CAST(%(lease_until)s AS DATETIME2(6))
WHERE id IN (%(ids)s) AND claim_id = CAST(%(claim_id)s AS BIGINT) AND status = 'running'
