-- The parents of a new job, each as it is now, locked until the enqueue commits (FOR NO
-- KEY UPDATE, as an UPDATE locks: deps_mark writes them next).
SELECT id, status FROM "skiplock_jobs"
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
ORDER BY id
FOR NO KEY UPDATE
