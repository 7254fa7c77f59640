-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE "skiplock_jobs"
SET status = 'cancelled', last_error = %(error)s, finished_at = statement_timestamp()
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status IN ('waiting', 'pending')
