-- DROP TABLE takes the trigger with it; the trigger function is dropped on its own.
DROP TABLE IF EXISTS "skiplock_jobs_deps";
DROP TABLE IF EXISTS "skiplock_jobs";
DROP TABLE IF EXISTS "skiplock_jobs_ticks";
DROP TABLE IF EXISTS "skiplock_jobs_idle";
DROP TABLE IF EXISTS "skiplock_jobs_counters";
DROP TABLE IF EXISTS "skiplock_jobs_queues";
DROP TABLE IF EXISTS "skiplock_jobs_rates";
DROP TABLE IF EXISTS "skiplock_jobs_workers";
DROP TABLE IF EXISTS "skiplock_jobs_schema";
DROP FUNCTION IF EXISTS "skiplock_jobs_notify"();
DROP FUNCTION IF EXISTS "skiplock_jobs_finished"()

-- ==== pause and rate limits ====
