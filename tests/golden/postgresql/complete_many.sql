-- Each row is still checked against its own attempt.
UPDATE "skiplock_jobs" AS j
SET status = 'done', result = v.result::json, lease_until = NULL, finished_at = now()
FROM unnest(%(ids)s::bigint[], %(attempts)s::integer[], %(results)s::text[]) AS v(id, attempt, result)
WHERE j.id = v.id AND j.attempt = v.attempt AND j.status = 'running'
RETURNING j.id
