-- list_jobs of one task (an App task's payload is {"task": name, ...}).
SELECT TOP (%(limit)s) * FROM [skiplock_jobs]
WHERE id < %(before_id)s
  AND (%(all_statuses)s = 1 OR status IN (%(statuses)s))
  AND (%(all_queues)s = 1 OR queue = %(queue)s)
  AND JSON_VALUE(payload, '$.task') = %(task)s
ORDER BY id DESC
