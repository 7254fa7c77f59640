-- OUTPUT without INTO is refused on a table with triggers; skiplock's table has none.
INSERT INTO [skiplock_jobs] (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
OUTPUT inserted.id
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                 DATEADD(MILLISECOND, %(delay_rem_ms)s,
                         DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
        %(idempotency_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s)
