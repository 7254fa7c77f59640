-- The dialect repeats enqueue_many_row once per job (placeholders only, never values), at
-- most 500 rows a statement. INSERT ... SELECT ... ORDER BY assigns the identity values in
-- that order, so a batch is claimed in the order it was given.
INSERT INTO [skiplock_jobs] (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
OUTPUT inserted.id, inserted.idempotency_key
SELECT %(queue)s, v.payload, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       v.ikey, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, CAST(%(headers)s AS NVARCHAR(MAX))
FROM (VALUES {rows}) AS v (n, payload, ikey)
ORDER BY v.n
