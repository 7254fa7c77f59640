-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN `skiplock_jobs` AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = 'cancelled', t.last_error = %(error)s, t.finished_at = UTC_TIMESTAMP(6)
WHERE t.status IN ('waiting', 'pending')
