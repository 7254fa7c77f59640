DROP TABLE IF EXISTS [skiplock_jobs];
DROP TABLE IF EXISTS [skiplock_jobs_ticks];
DROP TABLE IF EXISTS [skiplock_jobs_counters];
DROP TABLE IF EXISTS [skiplock_jobs_schema]

-- ==== job control: snooze, progress, dedupe windows, debounce ====
