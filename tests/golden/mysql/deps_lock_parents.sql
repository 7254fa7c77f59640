-- The parents of a new job, each as it is now, locked until the enqueue commits.
SELECT t.id, t.status FROM `skiplock_jobs` AS t
WHERE t.id IN (SELECT j.p FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j)
ORDER BY t.id
FOR UPDATE
