-- The periodic ledger: each schedule's latest tick (the ledger keeps only recent ones).
SELECT schedule, max(tick) AS last_tick, count(*) AS ticks
FROM "skiplock_jobs_ticks"
GROUP BY schedule
ORDER BY schedule
