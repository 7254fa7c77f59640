-- One fenced statement for the whole batch: each row must still be running at the attempt
-- and claim token its item names. %(items)s is one bound JSON array of [id, attempt,
-- claim_id, result] (claim_id null for a job claimed before the token existed; result: the
-- stored JSON text as a JSON string, or null), read back as rows by JSON_TABLE; each item
-- finds its row by the primary key, and the attempt with the token is the fence.
UPDATE JSON_TABLE(%(items)s, '$[*]' COLUMNS (
    id BIGINT PATH '$[0]', at INT PATH '$[1]', cid BIGINT PATH '$[2]',
    res LONGTEXT PATH '$[3]')) AS p
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at AND t.claim_id <=> p.cid
SET t.status = 'done', t.result = p.res, t.lease_until = NULL,
    t.finished_at = UTC_TIMESTAMP(6)
WHERE t.status = 'running' AND (%(marked)s = 1 OR t.has_children IS NULL)
