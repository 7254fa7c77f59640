-- After a claim took jobs of these keys (their lock rows held since key_try), or a cancel
-- ended one (under key_lock): each key's first pending job, now its head, no longer waits.
-- A statement of its own (READ COMMITTED: a fresh read view, taken once the locks were
-- held), so it sees every job of the keys whose enqueue committed before.
UPDATE (SELECT (SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
              WHERE e.order_key = k.name AND e.key_status = 'pending'
              ORDER BY e.order_key, e.key_status, e.id LIMIT 1) AS id
      FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
          name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS k) AS h
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = h.id
SET t.key_wait = NULL
WHERE t.key_wait = 1
