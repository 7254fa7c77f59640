-- On a duplicate active key, LAST_INSERT_ID(id) hands back the existing job's id; a
-- duplicate-key error would be a statement error, this is none.
INSERT INTO `skiplock_jobs` (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, created_at, order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, %(dedupe_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
        %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)
