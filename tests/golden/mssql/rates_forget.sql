-- In a prune's last batch: rate records older than the longest window (a week), which no
-- claim counts again; a claim prunes only its own queue's or key's, so a key never claimed
-- again would keep its records without this.
DELETE FROM [skiplock_jobs_rates] WHERE claimed_at < DATEADD(DAY, -7, SYSUTCDATETIME())

-- ==== dashboard and workers ====
