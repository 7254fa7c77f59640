-- Of the keys key_repair_keys read (%(keys)s, a JSON array), the heads still flagged:
-- each key's first pending job from the key index.
SELECT h.id FROM
    (SELECT (SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
             WHERE e.order_key = k.name AND e.key_status = 'pending'
             ORDER BY e.order_key, e.key_status, e.id LIMIT 1) AS id
     FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
         name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS k) AS h
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = h.id
WHERE t.key_wait = 1
