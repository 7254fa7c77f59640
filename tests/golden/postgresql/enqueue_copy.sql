COPY "skiplock_jobs" (id, queue, payload, priority, max_attempts, run_at, idempotency_key, headers) FROM STDIN
