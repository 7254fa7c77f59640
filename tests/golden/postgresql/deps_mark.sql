-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE "skiplock_jobs" SET has_children = TRUE
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND has_children IS NULL
