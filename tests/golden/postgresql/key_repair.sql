-- The safety net (run by a claim at most every 10 s, before the claim statement):
-- a key whose first pending job waits (key_wait) is given it back. Nothing this release
-- does leaves one; the previous release's claims, which run through the migration, clear
-- no flag. One step per key that has waiting jobs (key_wait_idx), then one look-up of its
-- head.
WITH RECURSIVE k(key) AS (
    SELECT min(order_key) FROM "skiplock_jobs" WHERE key_wait AND status = 'pending'
    UNION ALL
    SELECT (SELECT min(f.order_key) FROM "skiplock_jobs" AS f
            WHERE f.key_wait AND f.status = 'pending' AND f.order_key > k.key)
    FROM k WHERE k.key IS NOT NULL
)
UPDATE "skiplock_jobs" AS j SET key_wait = NULL
FROM (SELECT (SELECT e.id FROM "skiplock_jobs" AS e
              WHERE e.order_key = k.key
                AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0
              ORDER BY e.id LIMIT 1) AS id
      FROM k WHERE k.key IS NOT NULL) AS h
WHERE j.id = h.id AND j.key_wait
