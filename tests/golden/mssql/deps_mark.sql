-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE [skiplock_jobs] SET has_children = 1
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
  AND has_children IS NULL
