-- The enqueue locks (key_lock's rows) of the keys a claim picked jobs of, tried without
-- waiting: a key whose row does not come back is held by a keyed enqueue (or has no row
-- yet: key_rows), and its job is not taken. Held until the claim commits.
SELECT k.order_key FROM `skiplock_jobs_keys` AS k
WHERE k.order_key IN (
    SELECT j.name FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
        name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j)
FOR UPDATE SKIP LOCKED
