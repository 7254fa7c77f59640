-- Compare-and-set like claim_take (the same %(pairs)s): only a row still running at the
-- attempt the pick saw, with its lease still ended (its worker may have completed or
-- heartbeated it meanwhile).
UPDATE JSON_TABLE(%(pairs)s, '$[*]' COLUMNS (id BIGINT PATH '$[0]', at INT PATH '$[1]')) AS p
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at
SET t.status = 'failed', t.lease_until = NULL, t.finished_at = UTC_TIMESTAMP(6),
    t.last_error = CONCAT('lease expired: attempt ', t.attempt, ' of ', t.max_attempts,
                          ' did not finish before its lease ended (worker died or stalled)')
WHERE t.status = 'running' AND t.run_at <= UTC_TIMESTAMP(6)
