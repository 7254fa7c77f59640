INSERT INTO "skiplock_jobs" (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, headers)
SELECT %(queue)s, v.payload::json, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
       v.ikey::uuid, %(order_key)s, %(key_limit)s, %(headers)s
FROM unnest(%(payloads)s::text[], %(keys)s::text[]) WITH ORDINALITY AS v(payload, ikey, n)
ORDER BY v.n
RETURNING id, idempotency_key
