-- One fenced statement for the whole batch: each row must still be running at the attempt
-- its item names. %(items)s is one bound JSON array of [id, attempt, result] (result: the
-- stored JSON text as a JSON string, or null), read back as rows by JSON_TABLE; each item
-- finds its row by the primary key, and the attempt is the fence.
UPDATE `skiplock_jobs` AS t
JOIN JSON_TABLE(%(items)s, '$[*]' COLUMNS (
    id BIGINT PATH '$[0]', at INT PATH '$[1]', res LONGTEXT PATH '$[2]')) AS p
  ON t.id = p.id AND t.attempt = p.at
SET t.status = 'done', t.result = p.res, t.lease_until = NULL,
    t.finished_at = UTC_TIMESTAMP(6)
WHERE t.status = 'running' AND (%(marked)s = 1 OR t.has_children IS NULL)
