-- New jobs whose parents have not all ended: waiting, never claimed (not in the claim index).
UPDATE "skiplock_jobs" SET status = 'waiting'
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status = 'pending'
