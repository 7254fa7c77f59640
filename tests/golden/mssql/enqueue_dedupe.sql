-- SQL Server has no ON CONFLICT DO NOTHING. NOT EXISTS finds a committed active job
-- without an error (no row comes back, the caller looks it up with find_dedupe); a
-- concurrent insert of the same key that NOT EXISTS could not see still meets the filtered
-- unique index and raises 2601/2627, which the dialect turns into the same "look it up".
-- With XACT_ABORT OFF (see session) that error ends the statement, not the transaction.
INSERT INTO [skiplock_jobs] (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, order_key, key_limit, key_rate, key_rate_ms, headers)
OUTPUT inserted.id
SELECT %(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       %(idempotency_key)s, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s
WHERE NOT EXISTS (SELECT 1 FROM [skiplock_jobs]
                  WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running'))
