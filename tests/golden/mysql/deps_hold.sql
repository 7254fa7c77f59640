-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (claimable is NULL).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = IF(%(hold)s = 1, 'waiting', t.status), t.has_parents = 1
WHERE t.status = 'pending'
