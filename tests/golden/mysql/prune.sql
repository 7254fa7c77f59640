-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
-- A parent whose child has not finished stays (the child reads its result when claimed):
-- the parents still needed are read into a derived table first (MySQL refuses a subquery
-- on the table a DELETE deletes from).
DELETE FROM `skiplock_jobs`
WHERE finished_status IN (%(statuses)s)
  AND finished_at < TIMESTAMPADD(MICROSECOND, -%(older_ms)s * 1000, UTC_TIMESTAMP(6))
  AND id NOT IN (
    SELECT parent FROM (
        SELECT d.parent FROM `skiplock_jobs_deps` AS d JOIN `skiplock_jobs` AS c ON c.id = d.child
        WHERE c.status IN ('waiting', 'pending', 'running')) AS needed)
LIMIT %(limit)s
