-- enqueue_dedupe with the window's end (dedupe_ms > 0) or a debounce key.
INSERT INTO `skiplock_jobs` (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, created_at, order_key, key_limit, key_rate, key_rate_ms, dedupe_until, debounce_key,
                     headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, %(dedupe_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
        CASE WHEN %(dedupe_ms)s > 0
             THEN TIMESTAMPADD(MICROSECOND, %(dedupe_ms)s * 1000, UTC_TIMESTAMP(6)) END,
        %(debounce_key)s, %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM `skiplock_jobs` AS e FORCE INDEX (`skiplock_jobs_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in `skiplock_jobs_deps`. Id lists are bound as one JSON
-- array read by JSON_TABLE (one placeholder, whatever the number of ids). Locks: an
-- enqueue locks its parents FOR UPDATE and marks them has_children, a parent's end
-- (completion, failure, cancel) updates the parent and then, when it has the mark, locks
-- its waiting children FOR UPDATE; so a parent cannot end between an enqueue's read of its
-- status and the commit of the child's edges, and two parents of one child ending together
-- settle it one after the other (a locking read sees the latest committed rows, the
-- parents' statuses are read at READ COMMITTED).
