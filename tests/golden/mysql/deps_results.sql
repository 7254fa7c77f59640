-- The parents' results of claimed jobs (job.parent_results).
SELECT d.child, d.parent, p.result
FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (c BIGINT PATH '$')) AS j
JOIN `skiplock_jobs_deps` AS d ON d.child = j.c
JOIN `skiplock_jobs` AS p ON p.id = d.parent
