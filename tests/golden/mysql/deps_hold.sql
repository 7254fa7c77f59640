-- New jobs whose parents have not all ended: waiting, never claimed (claimable is NULL).
UPDATE `skiplock_jobs` AS t
JOIN JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j ON t.id = j.p
SET t.status = 'waiting'
WHERE t.status = 'pending'
