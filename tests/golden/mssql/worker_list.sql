-- seen_ago on the database's clock: a worker is gone once it is several of its beats.
SELECT id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen,
       DATEDIFF_BIG(MICROSECOND, last_seen, SYSUTCDATETIME()) / 1000000.0 AS seen_ago
FROM [skiplock_jobs_workers]
ORDER BY started_at, id
