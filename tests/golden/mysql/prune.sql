-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
DELETE FROM `skiplock_jobs`
WHERE status IN (%(statuses)s)
  AND finished_at < TIMESTAMPADD(MICROSECOND, -%(older_ms)s * 1000, UTC_TIMESTAMP(6))
LIMIT %(limit)s
