-- The heads key_repair_lock locked: they wait no longer. The list first, each row by its
-- primary key (as claim_take): with `id IN (SELECT ... JSON_TABLE ...)` MariaDB 10.11
-- read the whole table through its primary key for three ids.
UPDATE JSON_TABLE(%(ids)s, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = j.id
SET t.key_wait = NULL
WHERE t.key_wait = 1
