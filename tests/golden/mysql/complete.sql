-- marked (workflows; also fail, cancelled and complete_held): 0 matches only a row without
-- has_children, 1 any row. MySQL has no UPDATE ... RETURNING: a job's end is written with
-- 0 first, and only when that matched nothing again with 1; a match then means the job
-- has children (or none matched: the lease was lost). The UPDATE reads the row's latest
-- version, after any enqueue holding it committed, so a child's mark is never missed.
UPDATE `skiplock_jobs`
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND (%(marked)s = 1 OR has_children IS NULL)
