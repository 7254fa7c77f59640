-- The claims' test (a) "no earlier job of the key is pending", put in place of
-- {no_earlier_pending} above, on MySQL and MariaDB: the key's first pending entry only
-- (LIMIT 1; MariaDB's form before migration 0016, where NOT EXISTS cost it 3.5-5.3 ms a pick
-- against 2.1-3.1 on 10,000 grouped keyed jobs, while MySQL 9.7 was faster with NOT EXISTS,
-- 4.7-5.2 against 5.7-6.0: a comparison made before 0016, and not made again). Neither server
-- can bound a NOT EXISTS look-up by e.id < c.id (an outer reference): it read the key's
-- pending entries in id order and checked each, every one of them for a key's first job,
-- which since migration 0016 is the one job of a hot key a claim reads. ORDER BY the whole
-- index prefix: with `ORDER BY e.id` MySQL 9.7 read and sorted every pending entry of the
-- key (a pick on 5,000 jobs of one key: 5,003 index reads against 4, Handler_read_next). A
-- job that is running (an ended lease) passes when the key's first pending job is later.
COALESCE((
            SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = c.order_key AND e.key_status = 'pending'
            ORDER BY e.order_key, e.key_status, e.id LIMIT 1), c.id) >= c.id
