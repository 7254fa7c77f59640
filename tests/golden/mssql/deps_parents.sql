-- Every parent of these children, with its status now (NULL: pruned).
SELECT d.child, d.parent, d.run_on_failure, p.status
FROM [skiplock_jobs_deps] AS d LEFT JOIN [skiplock_jobs] AS p ON p.id = d.parent
WHERE d.child IN (SELECT c FROM OPENJSON(%(id_list)s) WITH (c BIGINT '$'))
