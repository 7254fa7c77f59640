-- A workflow's jobs that get a child next, in the same transaction: marked as written.
COPY "skiplock_jobs" (id, queue, payload, priority, max_attempts, run_at, idempotency_key, headers,
              has_children) FROM STDIN
