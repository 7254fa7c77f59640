-- key_wait: a keyed job enqueued while its key has a pending job waits behind it, out of
-- the claim index (key_wait), until the claim that takes the key's head (or the cancel
-- of it) clears the flag of the next one (key_next). Under the key's lock (key_lock, taken
-- before this statement), so this look-up sees every claim of the key that committed
-- before the lock was granted, and a claim of the key that commits later clears this
-- job's flag (docs/sql.md, "Per-key order"). For a job without a key the look-up is not run.
INSERT INTO `skiplock_jobs` (queue, payload, priority, max_attempts, run_at, idempotency_key, created_at,
                     order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)
