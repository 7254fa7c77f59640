-- Compare-and-set, so the claim is safe even where the pick's lock did not hold (a server
-- whose SKIP LOCKED does not lock, another isolation level): a row is taken only if it is
-- still claimable now at the attempt the pick saw. %(pairs)s is one bound JSON array of the
-- picked rows' [id, attempt] pairs (one parameter, not two per row: the driver formats each
-- bound value in Python); each pair finds its row by the primary key. Every change of state
-- either adds to the attempt (another claim) or makes the row unclaimable now (done, failed,
-- retried later, heartbeated), so two claims that read the same row cannot both take it:
-- InnoDB makes the second UPDATE wait for the first one's row lock, then finds the attempt
-- changed. The bound list first (STRAIGHT_JOIN) and each row by its primary key (FORCE
-- INDEX), here and in every UPDATE joined to a bound list of ids: on a small table MySQL
-- 9.7 and MariaDB 10.11 read the table (or the claim index) first instead, locking every
-- row they passed, and a claim waited for a user's open transaction that was completing
-- another job (test_a_claim_waits_for_no_transaction_that_completes_another_job); with
-- the list first but no hint, MariaDB 10.11 still scanned a two-row table for its rows
-- once version 1's claim index was gone.
UPDATE JSON_TABLE(%(pairs)s, '$[*]' COLUMNS (id BIGINT PATH '$[0]', at INT PATH '$[1]')) AS p
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at
SET t.attempt = t.attempt + 1, t.status = 'running', t.lease_until = %(lease_until)s,
    t.run_at = %(lease_until)s, t.finished_at = NULL, t.claim_id = %(claim_id)s
WHERE t.claimable = 1 AND t.run_at <= UTC_TIMESTAMP(6)
