SELECT MAX(version) AS version FROM `skiplock_jobs_schema`
