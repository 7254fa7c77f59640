-- seen_ago on the database's clock: a worker is gone once it is several of its beats.
SELECT id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen,
       EXTRACT(EPOCH FROM statement_timestamp() - last_seen) AS seen_ago
FROM "skiplock_jobs_workers"
ORDER BY started_at, id
