-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
UPDATE [skiplock_jobs] SET has_children = 1
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
  AND has_children IS NULL
