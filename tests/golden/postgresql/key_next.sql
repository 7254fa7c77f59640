-- After a claim took jobs of these keys (their locks held since the claim's statement),
-- or a cancel ended one (under key_lock): each key's first pending job, now its head, no
-- longer waits. A statement of its own (READ COMMITTED: a new snapshot, taken once the
-- locks were held), so it sees every job of the keys whose enqueue committed before.
UPDATE "skiplock_jobs" AS j SET key_wait = NULL
FROM (SELECT (SELECT e.id FROM "skiplock_jobs" AS e
              WHERE e.order_key = k.key
                AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0
              ORDER BY e.id LIMIT 1) AS id
      FROM unnest(%(keys)s::text[]) AS k(key)) AS h
WHERE j.id = h.id AND j.key_wait
