DROP TABLE IF EXISTS [skiplock_jobs];
DROP TABLE IF EXISTS [skiplock_jobs_schema]
