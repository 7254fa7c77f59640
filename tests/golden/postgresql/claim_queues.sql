-- As claim, over several queues: the claimable rows of those queues are sorted together.
-- Kept apart from claim on purpose: with `queue = ANY(array)` the planner cannot read the
-- index in (priority, run_at, id) order even for a one-element array, and sorts every
-- claimable row of the queue (seen: 64 ms for 180,000 pending rows, against an index
-- scan that stops after LIMIT rows with `queue = <value>`). No placeholder may appear in
-- a comment: the driver would ask for its value.
WITH picked AS (
    SELECT id, run_at AS due_at FROM "skiplock_jobs" AS c
    WHERE queue = ANY(%(queues)s::text[]) AND run_at <= statement_timestamp()
    AND (status = 'running' OR (status = 'pending' AND key_wait IS NULL))
    AND NOT EXISTS (SELECT 1 FROM "skiplock_jobs_queues" AS p WHERE p.queue = c.queue AND p.paused)
    AND (c.order_key IS NULL OR CASE WHEN
        NOT EXISTS (
            SELECT 1 FROM "skiplock_jobs" AS e
            WHERE e.order_key = c.order_key AND e.id < c.id
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        AND (SELECT count(*) FROM "skiplock_jobs" AS e
             WHERE e.order_key = c.order_key AND e.id <> c.id
               AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 1)
            < COALESCE(c.key_limit, 1)
        THEN pg_try_advisory_xact_lock(hashtext('skiplock key skiplock_jobs'), hashtext(c.order_key))
        ELSE FALSE END)
    ORDER BY priority, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE "skiplock_jobs" AS j SET
    status = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                  THEN 'failed' ELSE 'running' END,
    attempt = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                   THEN j.attempt ELSE j.attempt + 1 END,
    lease_until = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                       THEN NULL ELSE statement_timestamp() + %(lease_ms)s * interval '1 millisecond' END,
    run_at = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                  THEN j.run_at ELSE statement_timestamp() + %(lease_ms)s * interval '1 millisecond' END,
    last_error = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                      THEN 'lease expired: attempt ' || j.attempt || ' of ' || j.max_attempts
                           || ' did not finish before its lease ended (worker died or stalled)'
                      ELSE j.last_error END,
    finished_at = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                       THEN statement_timestamp() ELSE NULL END,
    claim_id = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                    THEN j.claim_id ELSE %(claim_id)s::bigint END
FROM picked WHERE j.id = picked.id
RETURNING j.id, j.queue, j.payload, j.priority, j.status, j.attempt, j.max_attempts, j.run_at,
          j.lease_until, j.idempotency_key::text AS idempotency_key, j.dedupe_key, j.last_error,
          j.result, j.created_at, j.cancel_requested, j.order_key, j.claim_id, j.headers, j.snoozes,
          (EXTRACT(EPOCH FROM statement_timestamp() - picked.due_at) * 1000000)::bigint AS waited_us,
          j.has_parents, j.has_children, j.key_rate, j.key_rate_ms
