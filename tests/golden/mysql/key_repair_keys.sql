-- The safety net (run by a claim at most every 10 s, before its pick): a key whose
-- first pending job waits (key_wait) is given it back. Nothing this release does leaves
-- one; the previous release's claims, which run through the migration, clear no flag.
-- Each run reads at most %(batch)s entries of the waiting jobs' index (key_waiting), from
-- the key after the last one the previous run read (%(after)s; NULL: from the first), so
-- its cost is bounded whatever the number of waiting jobs, and the runs go round every
-- key: a key is a step (`> after` skips the rest of its entries), however many jobs wait
-- in it. Neither server bounds a step from one key to the next within one statement (a
-- recursive CTE's `key_waiting > previous key` scanned the index from its start), nor
-- chose a loose index scan. The keys it read, each once, in the index's order, with how
-- many entries of each it read (the dialect keeps the last key when the batch was full).
-- A plain SELECT here and in key_repair: a consistent read that waits for no lock (an
-- UPDATE joined to these reads locked what it read, and waited for a row a user's open
-- transaction inserted); key_repair_take then clears the flag of the heads it names
-- whose rows are not locked.
SELECT w.name, COUNT(*) AS n FROM
    (SELECT f.key_waiting AS name FROM `skiplock_jobs` AS f FORCE INDEX (`skiplock_jobs_key_wait`)
     WHERE f.key_waiting > %(after)s OR (%(after)s IS NULL AND f.key_waiting IS NOT NULL)
     ORDER BY f.key_waiting, f.id LIMIT %(batch)s) AS w
GROUP BY w.name ORDER BY w.name
