-- MySQL has no UPDATE … RETURNING: select the rows, then update them, in one short
-- transaction at READ COMMITTED. db_now is the database clock the new lease starts from.
-- run_at, lease_until and finished_at are left out: the claim sets them (fewer DATETIME
-- values for the pure-Python driver to decode).
SELECT id, queue, payload, priority, status, attempt, max_attempts, idempotency_key,
       dedupe_key, last_error, result, created_at, cancel_requested, UTC_TIMESTAMP(6) AS db_now
FROM `skiplock_jobs`
WHERE claimable = 1 AND queue = %(queue)s AND run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
