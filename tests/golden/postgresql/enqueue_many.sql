INSERT INTO "skiplock_jobs" (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
SELECT %(queue)s, v.payload::json, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
       v.ikey::uuid, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s
FROM unnest(%(payloads)s::text[], %(keys)s::text[]) WITH ORDINALITY AS v(payload, ikey, n)
ORDER BY v.n
RETURNING id, idempotency_key
