-- Which of these keys have a lock row at all (a consistent, non-locking read).
SELECT k.order_key FROM `skiplock_jobs_keys` AS k
WHERE k.order_key IN (
    SELECT j.name FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
        name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j)
