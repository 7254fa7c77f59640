-- The safety net (run by a claim at most every 10 s, before its pick): a key whose
-- first pending job waits (key_wait) is given it back. Nothing this release does leaves
-- one; the previous release's claims, which run through the migration, clear no flag. The
-- keys that have waiting jobs come from their index (key_waiting), then the head of each
-- from the key index. It reads every waiting job's entry of that index (5,049 reads for
-- 5,050 waiting jobs, MySQL 9.7 and MariaDB 10.11): neither server bounds a step from one
-- key to the next (a recursive CTE's `key_waiting > previous key` scanned the index from
-- its start), nor chose a loose index scan here; PostgreSQL's repair takes one step per key.
-- A plain SELECT: a consistent read that waits for no lock (an UPDATE joined to these
-- reads locked what it read, and waited for a row a user's open transaction inserted);
-- key_repair_take then clears the flag of the heads it names whose rows are not locked.
-- The second part: a running job that kept its flag (a claim of a release before 0016 took
-- it) is out of the claim index (claimable, key_wait, ...) and its lease, should it end,
-- would not be claimed again: its flag is cleared too.
SELECT h.id FROM
    (SELECT (SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
             WHERE e.order_key = w.name AND e.key_status = 'pending'
             ORDER BY e.order_key, e.key_status, e.id LIMIT 1) AS id
     FROM (SELECT DISTINCT f.key_waiting AS name
           FROM `skiplock_jobs` AS f FORCE INDEX (`skiplock_jobs_key_wait`)
           WHERE f.key_waiting IS NOT NULL) AS w) AS h
JOIN `skiplock_jobs` AS t ON t.id = h.id
WHERE t.key_wait = 1
UNION
SELECT r.id FROM `skiplock_jobs` AS r FORCE INDEX (`skiplock_jobs_ready`)
WHERE r.claimable = 1 AND r.key_wait = 1 AND r.status = 'running'
