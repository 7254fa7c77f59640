-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        SUM(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS pending,
        SUM(CASE WHEN status = 'pending' AND run_at > SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS scheduled,
        SUM(CASE WHEN status = 'running' AND lease_until >= SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS running,
        SUM(CASE WHEN status = 'running' AND lease_until < SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS expired,
        SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done,
        SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
        SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled,
        SUM(CASE WHEN status = 'waiting' THEN 1 ELSE 0 END) AS waiting,
        DATEDIFF_BIG(MICROSECOND,
            MIN(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN run_at END),
            SYSUTCDATETIME()) / 1000000.0 AS oldest_pending_age
    FROM [skiplock_jobs]
    WHERE %(all_queues)s = 1 OR queue IN (%(queues)s)
) AS s
LEFT JOIN [skiplock_jobs_counters] AS c ON c.name = N'pruned'
