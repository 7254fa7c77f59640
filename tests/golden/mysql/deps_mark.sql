-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.has_children = 1
WHERE t.has_children IS NULL
