-- MySQL has no UPDATE … RETURNING: select the rows, then update them, in one short
-- transaction at READ COMMITTED. A keyed job is claimable only while no earlier job of
-- its key is pending and fewer than its key_limit (NULL: 1) other jobs of its key run;
-- FORCE INDEX: with statistics taken on an emptier table MySQL 9 read these look-ups
-- through the claim index, every active row of the queue for each row the pick reads
-- (1.3 s for a pick on 10,000 grouped keyed jobs against 6 ms). The subqueries are a
-- consistent (non-locking) read, so it never waits for another claim (docs/sql.md); so
-- is the paused flag's (q.pause: docs/control.md), locked by no claim.
-- claimable = 1 AND key_wait IS NULL (migrations 0016, 0017): running, or pending and not waiting
-- behind its key's head, so the claim index reads one pending job of a key, not all of
-- them; FORCE INDEX, so that no server reads the table for it. The
-- dialect then tries the lock of each key it picked a job of (key_try: skipped while a
-- keyed enqueue holds it) and, after the take, clears the flag of each taken key's next
-- job (key_next).
-- db_now is the database clock the new lease starts from; waited_us the microseconds from
-- when the row was due (its run_at) to it, for the worker's wait metric.
-- run_at, lease_until and finished_at are left out: the claim sets them (fewer DATETIME
-- values for the pure-Python driver to decode).
SELECT id, queue, payload, priority, status, attempt, max_attempts, idempotency_key,
       dedupe_key, last_error, result, created_at, cancel_requested, order_key, snoozes,
       UTC_TIMESTAMP(6) AS db_now, headers,
       TIMESTAMPDIFF(MICROSECOND, run_at, UTC_TIMESTAMP(6)) AS waited_us, has_parents,
       key_rate, key_rate_ms
FROM `skiplock_jobs` AS c FORCE INDEX (`skiplock_jobs_ready`)
WHERE claimable = 1 AND c.key_wait IS NULL AND queue = %(queue)s AND run_at <= UTC_TIMESTAMP(6)
  AND NOT EXISTS (SELECT 1 FROM `skiplock_jobs_queues` AS p WHERE p.queue = %(queue)s AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        COALESCE((
            SELECT e.id FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = c.order_key AND e.key_status = 'pending'
            ORDER BY e.order_key, e.key_status, e.id LIMIT 1), c.id) >= c.id
        AND (SELECT COUNT(*) FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
             WHERE e.order_key = c.order_key AND e.key_status = 'running' AND e.id <> c.id)
            < COALESCE(c.key_limit, 1)))
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
