DROP TABLE IF EXISTS `skiplock_jobs_deps`;
DROP TABLE IF EXISTS `skiplock_jobs`;
DROP TABLE IF EXISTS `skiplock_jobs_ticks`;
DROP TABLE IF EXISTS `skiplock_jobs_keys`;
DROP TABLE IF EXISTS `skiplock_jobs_counters`;
DROP TABLE IF EXISTS `skiplock_jobs_queues`;
DROP TABLE IF EXISTS `skiplock_jobs_rates`;
DROP TABLE IF EXISTS `skiplock_jobs_workers`;
DROP TABLE IF EXISTS `skiplock_jobs_schema`

-- ==== pause and rate limits ====
