-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM [skiplock_jobs] AS c WITH (UPDLOCK, ROWLOCK)
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM [skiplock_jobs_deps] AS d
    WHERE d.parent IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')))
ORDER BY c.id
