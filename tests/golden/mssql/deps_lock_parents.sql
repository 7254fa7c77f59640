-- The parents of a new job, each as it is now, locked until the enqueue commits.
SELECT t.id, t.status FROM [skiplock_jobs] AS t WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE t.id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
ORDER BY t.id
