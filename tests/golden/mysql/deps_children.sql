-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM `skiplock_jobs` AS c
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM `skiplock_jobs_deps` AS d
    JOIN JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j ON d.parent = j.p)
ORDER BY c.id
FOR UPDATE
