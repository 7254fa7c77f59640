-- The dialect repeats the VALUES row once per job (placeholders only, never values).
INSERT INTO `skiplock_jobs` (queue, payload, priority, max_attempts, run_at, idempotency_key, created_at)
VALUES {rows}
