-- The parents' results of claimed jobs (job.parent_results).
SELECT d.child, d.parent, p.result
FROM "skiplock_jobs_deps" AS d JOIN "skiplock_jobs" AS p ON p.id = d.parent
WHERE d.child IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
