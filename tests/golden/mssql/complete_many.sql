-- The dialect repeats complete_many_row once per job, at most 500 rows a statement. Each
-- row is still checked against its own attempt and claim token (0 never is one: NULL, a job
-- claimed before the token existed, matches only NULL).
UPDATE j
SET status = 'done', result = v.result, lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.has_children
FROM [skiplock_jobs] AS j
JOIN (VALUES {rows}) AS v (id, attempt, claim_id, result)
  ON j.id = v.id AND j.attempt = v.attempt AND ISNULL(j.claim_id, 0) = ISNULL(v.claim_id, 0)
WHERE j.status = 'running'
