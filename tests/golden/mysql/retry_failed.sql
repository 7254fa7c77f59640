-- failed → pending, now, with max_attempts more attempts than it has used (the fencing
-- token never goes back). A job whose dedupe_key is held by an active job stays failed:
-- the self-join finds it (MySQL refuses a subquery on the table being updated). Not
-- waiting (key_wait): an older job of its key than the key's pending ones, it is the key's
-- head now (the previous head, not flagged, is read by claims until it runs).
UPDATE `skiplock_jobs` AS j LEFT JOIN `skiplock_jobs` AS a ON a.dedupe_active = j.dedupe_key
SET j.status = 'pending', j.run_at = UTC_TIMESTAMP(6), j.lease_until = NULL,
    j.finished_at = NULL, j.key_wait = NULL,
    j.max_attempts = LEAST(2147483647, j.attempt + COALESCE(%(attempts)s, j.max_attempts))
WHERE j.status = 'failed' AND a.id IS NULL
  AND (%(all_ids)s OR j.id IN (%(ids)s))
  AND (%(all_queues)s OR j.queue IN (%(queues)s))
