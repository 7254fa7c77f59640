-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (not in the claim
-- index).
UPDATE "skiplock_jobs"
SET status = CASE WHEN %(hold)s THEN 'waiting' ELSE status END, has_parents = TRUE
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status = 'pending'
