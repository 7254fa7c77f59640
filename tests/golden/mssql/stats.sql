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
    DATEDIFF_BIG(MICROSECOND,
        MIN(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN run_at END),
        SYSUTCDATETIME()) / 1000000.0 AS oldest_pending_age
FROM [skiplock_jobs]
WHERE %(all_queues)s = 1 OR queue IN (%(queues)s)
