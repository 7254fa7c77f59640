UPDATE `skiplock_jobs` SET progress = %(progress)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s
  AND status = 'running'
