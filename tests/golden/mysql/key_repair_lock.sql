-- The heads key_repair found, locked, those another transaction holds skipped (the next
-- repair finds them again): a claim waits for no one.
SELECT id FROM `skiplock_jobs`
WHERE id IN (SELECT j.id FROM JSON_TABLE(%(ids)s, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j)
  AND key_wait = 1
FOR UPDATE SKIP LOCKED
