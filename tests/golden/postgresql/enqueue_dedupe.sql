-- ON CONFLICT waits for a concurrent insert of the same key to commit or roll back, and
-- never raises, so it is safe inside the caller's own transaction.
INSERT INTO "skiplock_jobs" (queue, payload, priority, max_attempts, run_at, idempotency_key, dedupe_key,
                     order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s::json, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
        %(idempotency_key)s::uuid, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
        CASE WHEN %(order_key)s::text IS NOT NULL AND EXISTS (
            SELECT 1 FROM "skiplock_jobs" AS e
            WHERE e.order_key = %(order_key)s::text
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        THEN TRUE END)
ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running')
DO NOTHING
RETURNING id
