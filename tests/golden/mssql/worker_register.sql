-- A worker process's row in the live worker list (migration 0011), written as it starts
-- (its id is new; written again only if the row was forgotten). UPDLOCK, HOLDLOCK hold
-- the key from the check to the insert.
INSERT INTO [skiplock_jobs_workers]
    (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
SELECT %(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
       SYSUTCDATETIME(), SYSUTCDATETIME()
WHERE NOT EXISTS (SELECT 1 FROM [skiplock_jobs_workers] WITH (UPDLOCK, HOLDLOCK) WHERE id = %(id)s)
