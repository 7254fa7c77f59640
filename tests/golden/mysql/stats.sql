-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
        SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
        SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
        SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
        SUM(status = 'done') AS done,
        SUM(status = 'failed') AS failed,
        SUM(status = 'cancelled') AS cancelled,
        SUM(status = 'waiting') AS waiting,
        TIMESTAMPDIFF(MICROSECOND,
            MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
            UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
    FROM `skiplock_jobs`
    WHERE %(all_queues)s OR queue IN (%(queues)s)
) AS s
LEFT JOIN `skiplock_jobs_counters` AS c ON c.name = 'pruned'
