UPDATE "skiplock_jobs" SET progress = %(progress)s::json
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
