-- failed → pending, now, with max_attempts more attempts than it has used (the fencing
-- token never goes back). A job whose dedupe_key is held by an active job stays failed.
-- Not waiting (key_wait): an older job of its key than the key's pending ones, it is the
-- key's head now (the previous head, not flagged, is read by claims until it runs).
UPDATE "skiplock_jobs" AS j
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL, finished_at = NULL,
    key_wait = NULL,
    max_attempts = LEAST(2147483647, j.attempt::bigint + COALESCE(%(attempts)s, j.max_attempts))
WHERE j.status = 'failed'
  AND (%(all_ids)s OR j.id = ANY(%(ids)s::bigint[]))
  AND (%(all_queues)s OR j.queue = ANY(%(queues)s::text[]))
  AND (j.dedupe_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM "skiplock_jobs" AS a
        WHERE a.dedupe_key = j.dedupe_key AND a.status IN ('pending', 'running')))
