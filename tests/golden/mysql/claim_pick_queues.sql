SELECT id, queue, payload, priority, status, attempt, max_attempts, idempotency_key,
       dedupe_key, last_error, result, created_at, cancel_requested, order_key, snoozes,
       UTC_TIMESTAMP(6) AS db_now, headers,
       TIMESTAMPDIFF(MICROSECOND, run_at, UTC_TIMESTAMP(6)) AS waited_us, has_parents,
       key_rate, key_rate_ms
FROM `skiplock_jobs` AS c FORCE INDEX (`skiplock_jobs_ready`)
WHERE claimable = 1 AND c.key_wait IS NULL AND queue IN (%(queues)s)
  AND run_at <= UTC_TIMESTAMP(6)
  AND NOT EXISTS (SELECT 1 FROM `skiplock_jobs_queues` AS p WHERE p.queue = c.queue AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        COALESCE((
            SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = c.order_key AND e.key_status = 'pending'
            ORDER BY e.order_key, e.key_status, e.id LIMIT 1), c.id) >= c.id
        AND (SELECT COUNT(*) FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
             WHERE e.order_key = c.order_key AND e.key_status = 'running' AND e.id <> c.id)
            < COALESCE(c.key_limit, 1)))
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
