-- list_jobs of one task (an App task's payload is {"task": name, ...}). Before SQL Server
-- 2022 a top-level JSON scalar (a payload that is a plain string) is not JSON to
-- JSON_VALUE, which raises on it: the CASE reads only what ISJSON accepts.
SELECT TOP (%(limit)s) * FROM [skiplock_jobs]
WHERE id < %(before_id)s
  AND (%(all_statuses)s = 1 OR status IN (%(statuses)s))
  AND (%(all_queues)s = 1 OR queue = %(queue)s)
  AND CASE WHEN ISJSON(payload) = 1 THEN JSON_VALUE(payload, '$.task') END = %(task)s
ORDER BY id DESC

-- ==== job control: snooze, progress, dedupe windows, debounce ====
