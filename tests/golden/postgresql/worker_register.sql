-- A worker process's row in the live worker list (migration 0011), written as it starts.
INSERT INTO "skiplock_jobs_workers" (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
        statement_timestamp(), statement_timestamp())
ON CONFLICT (id) DO UPDATE SET in_flight = 0, last_seen = statement_timestamp()
