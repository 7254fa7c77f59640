-- Each row is still checked against its own attempt and claim token. "(status = 'running') IS TRUE" means
-- status = 'running' (the column is NOT NULL) but keeps the planner off the claim index:
-- once statistics say few rows run, it would scan every pending row of that index for
-- each batch (measured: completion 2-3x slower with a backlog); the primary key finds
-- each row directly.
UPDATE "skiplock_jobs" AS j
SET status = 'done', result = v.result::json, lease_until = NULL, finished_at = statement_timestamp()
FROM unnest(%(ids)s::bigint[], %(attempts)s::integer[], %(claim_ids)s::bigint[], %(results)s::text[])
     AS v(id, attempt, claim_id, result)
WHERE j.id = v.id AND j.attempt = v.attempt AND j.claim_id IS NOT DISTINCT FROM v.claim_id
  AND (j.status = 'running') IS TRUE
RETURNING j.id, j.has_children
