-- Newest first, one page: the caller passes the last id it saw as before_id (keyset
-- pagination). The primary key is read backwards; the filters are checked on the way.
SELECT TOP (%(limit)s) * FROM [skiplock_jobs]
WHERE id < %(before_id)s
  AND (%(all_statuses)s = 1 OR status IN (%(statuses)s))
  AND (%(all_queues)s = 1 OR queue = %(queue)s)
ORDER BY id DESC
