-- The queue's claims that have left the window are counted by no claim again.
DELETE FROM "skiplock_jobs_rates"
WHERE queue = %(queue)s
  AND claimed_at <= statement_timestamp() - %(per_ms)s * interval '1 millisecond'
