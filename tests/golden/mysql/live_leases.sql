-- Single mode, after taking the lock: running jobs whose lease has not ended, or ended
-- less than %(margin_s)s seconds ago, on the statement's clock. A holder cut off from the
-- database cannot heartbeat, so its leases end while its handlers run; once back, its
-- heartbeats renew them: the margin gives it time to.
SELECT id, attempt, claim_id FROM `skiplock_jobs` FORCE INDEX (`skiplock_jobs_ready`)
WHERE claimable = 1 AND key_wait IS NULL AND status = 'running'
  AND lease_until > TIMESTAMPADD(SECOND, -%(margin_s)s, UTC_TIMESTAMP(6))
LIMIT %(limit)s
