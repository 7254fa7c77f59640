UPDATE `skiplock_jobs`
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
