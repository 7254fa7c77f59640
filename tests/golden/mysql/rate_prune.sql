-- The queue's claims that have left the window are counted by no claim again.
DELETE FROM `skiplock_jobs_rates`
WHERE queue = %(queue)s
  AND claimed_at <= TIMESTAMPADD(MICROSECOND, %(per_ms)s * -1000, UTC_TIMESTAMP(6))
