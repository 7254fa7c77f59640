-- The whole batch as one bound JSON array of [payload_text, idempotency_key] pairs:
-- one placeholder instead of seven per row (the pure-Python driver binds each one in
-- Python). JSON_TABLE exists in MySQL 8.0.4+ and MariaDB 10.6+; rows go in array order.
-- has_children: TRUE for a workflow's jobs that get a child next in the same transaction.
-- key_wait as in enqueue: with a key, every job of the batch but the first waits behind it.
INSERT INTO `skiplock_jobs` (queue, payload, priority, max_attempts, run_at, idempotency_key, created_at,
                     order_key, key_limit, key_rate, key_rate_ms, headers, has_children, key_wait)
SELECT %(queue)s, v.payload, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
       v.ikey, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
       %(has_children)s,
       CASE WHEN %(order_key)s IS NULL THEN NULL
            WHEN v.n > 1 OR EXISTS (
                SELECT 1 FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
                WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
            THEN 1 END
FROM JSON_TABLE(%(rows)s, '$[*]' COLUMNS (
    n FOR ORDINALITY,
    payload LONGTEXT CHARACTER SET utf8mb4 PATH '$[0]',
    ikey CHAR(36) CHARACTER SET utf8mb4 PATH '$[1]'
)) AS v
ORDER BY v.n
