UPDATE "skiplock_jobs"
SET status = 'done', result = %(result)s::json, lease_until = NULL, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
