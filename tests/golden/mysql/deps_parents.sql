-- Every parent of these children, with its status now (NULL: pruned).
SELECT d.child, d.parent, d.run_on_failure, p.status
FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (c BIGINT PATH '$')) AS j
JOIN `skiplock_jobs_deps` AS d ON d.child = j.c
LEFT JOIN `skiplock_jobs` AS p ON p.id = d.parent
