-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE [skiplock_jobs]
SET status = 'cancelled', last_error = %(error)s, finished_at = SYSUTCDATETIME()
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
  AND status IN ('waiting', 'pending')
