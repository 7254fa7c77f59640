-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM "skiplock_jobs" AS c
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM "skiplock_jobs_deps" AS d
    WHERE d.parent IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json)))
ORDER BY c.id
FOR UPDATE
