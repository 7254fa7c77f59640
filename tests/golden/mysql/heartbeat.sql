UPDATE `skiplock_jobs`
SET lease_until = TIMESTAMPADD(MICROSECOND, %(lease_ms)s * 1000, UTC_TIMESTAMP(6)),
    run_at = TIMESTAMPADD(MICROSECOND, %(lease_ms)s * 1000, UTC_TIMESTAMP(6))
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
