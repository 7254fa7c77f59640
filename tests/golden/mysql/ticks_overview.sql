-- The periodic ledger: each schedule's latest tick (the ledger keeps only recent ones).
SELECT schedule, MAX(tick) AS last_tick, COUNT(*) AS ticks
FROM `skiplock_jobs_ticks`
GROUP BY schedule
ORDER BY schedule
