UPDATE [skiplock_jobs] SET progress = %(progress)s
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
