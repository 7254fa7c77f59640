-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = 'pending', t.run_at = GREATEST(t.run_at, UTC_TIMESTAMP(6))
WHERE t.status = 'waiting'
