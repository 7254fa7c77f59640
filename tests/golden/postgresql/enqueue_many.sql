-- key_wait as in enqueue: with a key, every job of the batch but the first waits behind it.
INSERT INTO "skiplock_jobs" (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers, key_wait)
SELECT %(queue)s, v.payload::json, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
       v.ikey::uuid, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
       CASE WHEN %(order_key)s::text IS NULL THEN NULL
            WHEN v.n > 1 OR EXISTS (
                SELECT 1 FROM "skiplock_jobs" AS e
                WHERE e.order_key = %(order_key)s::text
                  AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
            THEN TRUE END
FROM unnest(%(payloads)s::text[], %(keys)s::text[]) WITH ORDINALITY AS v(payload, ikey, n)
ORDER BY v.n
RETURNING id, idempotency_key
