SELECT id, queue, payload, priority, status, attempt, max_attempts, idempotency_key,
       dedupe_key, last_error, result, created_at, cancel_requested, UTC_TIMESTAMP(6) AS db_now
FROM `skiplock_jobs`
WHERE claimable = 1 AND queue IN (%(queues)s) AND run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
