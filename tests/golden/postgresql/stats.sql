-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        count(*) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()) AS pending,
        count(*) FILTER (WHERE status = 'pending' AND run_at > statement_timestamp()) AS scheduled,
        count(*) FILTER (WHERE status = 'running' AND lease_until >= statement_timestamp()) AS running,
        count(*) FILTER (WHERE status = 'running' AND lease_until < statement_timestamp()) AS expired,
        count(*) FILTER (WHERE status = 'done') AS done,
        count(*) FILTER (WHERE status = 'failed') AS failed,
        count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
        count(*) FILTER (WHERE status = 'waiting') AS waiting,
        EXTRACT(EPOCH FROM statement_timestamp() - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()))
            AS oldest_pending_age
    FROM "skiplock_jobs"
    WHERE %(all_queues)s OR queue = ANY(%(queues)s::text[])
) AS s
LEFT JOIN "skiplock_jobs_counters" AS c ON c.name = 'pruned'
