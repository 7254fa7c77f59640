-- enqueue_dedupe with the window's end (dedupe_ms > 0) or a debounce key; a duplicate
-- active dedupe_key is handled as there (no row, or 2601/2627).
INSERT INTO [skiplock_jobs] (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, order_key, key_limit, key_rate, key_rate_ms, dedupe_until, debounce_key, headers)
OUTPUT inserted.id
SELECT %(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       %(idempotency_key)s, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
       CASE WHEN %(dedupe_ms)s > 0
            THEN DATEADD(MILLISECOND, %(dedupe_rem_ms)s,
                         DATEADD(SECOND, %(dedupe_s)s, SYSUTCDATETIME())) END,
       %(debounce_key)s, %(headers)s
WHERE NOT EXISTS (SELECT 1 FROM [skiplock_jobs]
                  WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running'))

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in [skiplock_jobs_deps]. Id lists are bound as one JSON
-- array read by OPENJSON (2,100 parameters would not hold a 10,000-job group's ids).
-- Locks: an enqueue holds its parents' update locks (UPDLOCK, HOLDLOCK) until it commits
-- and marks them has_children, a parent's end (completion, failure, cancel) updates the
-- parent and then, when it has the mark, locks its waiting children (UPDLOCK); so a
-- parent cannot end between an enqueue's read of its status and the commit of the child's
-- edges, and two parents of one child ending together settle it one after the other.
