-- The safety net (run by a claim at most every 10 s, before the claim statement):
-- a key whose first pending job waits (key_wait) is given it back. Nothing this release
-- does leaves one; the previous release's claims, which run through the migration, clear
-- no flag. One step per key that has waiting jobs (key_wait_idx), then one look-up of its
-- head; at most %(batch)s keys a run, from the key after %(after)s (the last key the
-- previous run read; NULL: from the first), so a run's cost is bounded and the runs go
-- round every key ('': keys are not empty, and sort after it in every deterministic
-- collation; a bound, not `IS NULL OR`, so that a generic plan reads the index from
-- there too). It returns the last key it read and how many it read (the dialect keeps
-- that key when the batch was full).
WITH RECURSIVE k(key, n) AS (
    SELECT min(order_key), 1 FROM "skiplock_jobs"
    WHERE key_wait AND status = 'pending'
      AND order_key > COALESCE(%(after)s::text, '')
    UNION ALL
    SELECT (SELECT min(f.order_key) FROM "skiplock_jobs" AS f
            WHERE f.key_wait AND f.status = 'pending' AND f.order_key > k.key), k.n + 1
    FROM k WHERE k.key IS NOT NULL AND k.n < %(batch)s
), heads AS (
    -- the heads as an array (an InitPlan), so that each is found by the primary key: as
    -- a join, the planner hashed every flagged row of a table it had no statistics of
    UPDATE "skiplock_jobs" AS j SET key_wait = NULL
    WHERE j.id = ANY(ARRAY(
        SELECT (SELECT e.id FROM "skiplock_jobs" AS e
                WHERE e.order_key = k.key
                  AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0
                ORDER BY e.id LIMIT 1)
        FROM k WHERE k.key IS NOT NULL))
      AND j.key_wait
)
SELECT (SELECT k.key FROM k WHERE k.key IS NOT NULL ORDER BY k.n DESC LIMIT 1) AS last_key,
       (SELECT count(k.key) FROM k) AS n
