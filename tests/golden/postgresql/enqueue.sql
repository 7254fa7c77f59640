INSERT INTO "skiplock_jobs" (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
VALUES (%(queue)s, %(payload)s::json, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
        %(idempotency_key)s::uuid, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s)
RETURNING id
