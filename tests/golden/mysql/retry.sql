UPDATE `skiplock_jobs`
SET status = 'pending', run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6)),
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
