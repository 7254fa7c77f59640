-- The claims' test (a) "no earlier job of the key is pending", put in place of
-- {no_earlier_pending} above (MySQL; MariaDB's form below). Neither server can bound the
-- look-up by e.id < c.id (an outer reference): they read the key's pending entries in id
-- order and check each.
NOT EXISTS (
            SELECT 1 FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = c.order_key AND e.key_status = 'pending' AND e.id < c.id)
