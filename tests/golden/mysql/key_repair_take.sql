-- The heads key_repair_lock locked: they wait no longer.
UPDATE `skiplock_jobs` SET key_wait = NULL
WHERE id IN (SELECT j.id FROM JSON_TABLE(%(ids)s, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j)
  AND key_wait = 1
