-- OUTPUT has_children (workflows; also fail, cancelled, complete_many and the claim's
-- lease ends): the row as written, after any enqueue holding its lock committed, so a
-- child's mark is never missed; only a job with the mark looks for waiting children.
UPDATE [skiplock_jobs]
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.has_children
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
