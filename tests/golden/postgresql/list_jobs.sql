-- Newest first, one page: the caller passes the last id it saw as before_id (keyset
-- pagination). The primary key is read backwards; the filters are checked on the way.
SELECT * FROM "skiplock_jobs"
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status = ANY(%(statuses)s::text[]))
  AND (%(all_queues)s OR queue = %(queue)s)
ORDER BY id DESC
LIMIT %(limit)s
