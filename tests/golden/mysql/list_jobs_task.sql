-- list_jobs of one task (an App task's payload is {"task": name, ...}).
SELECT * FROM `skiplock_jobs`
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status IN (%(statuses)s))
  AND (%(all_queues)s OR queue = %(queue)s)
  AND JSON_UNQUOTE(JSON_EXTRACT(payload, '$.task')) = %(task)s
ORDER BY id DESC
LIMIT %(limit)s

-- ==== job control: snooze, progress, dedupe windows, debounce ====
