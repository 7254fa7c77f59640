-- RETURNING has_children (workflows; also fail, cancelled, complete_many and the claim's
-- lease ends): the row as written, its latest version, so a mark committed by a child's
-- enqueue while this write waited for the row's lock is seen; only a job with the mark
-- looks for waiting children.
UPDATE "skiplock_jobs"
SET status = 'done', result = %(result)s::json, lease_until = NULL, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children
