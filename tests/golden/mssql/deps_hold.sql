-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (not in the claim
-- index).
UPDATE [skiplock_jobs]
SET status = CASE WHEN %(hold)s = 1 THEN 'waiting' ELSE status END, has_parents = 1
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')) AND status = 'pending'
