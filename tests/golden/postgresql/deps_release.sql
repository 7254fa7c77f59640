-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE "skiplock_jobs" SET status = 'pending', run_at = GREATEST(run_at, statement_timestamp())
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status = 'waiting'
