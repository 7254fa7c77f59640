-- A worker process's row in the live worker list (migration 0011), written as it starts.
INSERT INTO `skiplock_jobs_workers` (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
        UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE in_flight = 0, last_seen = UTC_TIMESTAMP(6)
