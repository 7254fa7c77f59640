-- One statement: pick with SKIP LOCKED, then take the picked rows. Nothing of a paused
-- queue (q.pause): the flag is read once, by this statement's snapshot (docs/control.md). A keyed job is
-- claimable only while no earlier job of its key is pending and fewer than its key_limit
-- (NULL: 1) other jobs of its key run (docs/sql.md: why two claims cannot hand out more
-- than that). The look-ups name the job's state as the key index does (0 pending, 1
-- running): written `e.status = 'pending'` they would also fit the claim index, and the
-- planner took that one (a scan of every active row per look-up, 138 ms a claim) when its
-- statistics were gathered while the table held finished jobs only. A picked row that is
-- 'running' has an expired lease: it is claimed again as attempt + 1, or, when its
-- attempts are spent, ends 'failed' (returned too: the dialect drops it). It returns the
-- columns a Job is built from, the key as text (psycopg would build a UUID object per
-- row); finished_at is NULL on a claimed job and is left out. Unordered: the taken rows all
-- have the same new run_at, so the claim's order (priority, run_at, id) is (priority, id),
-- which the dialect sorts by (a read-back and sort of the rows on the server cost 2/5 of
-- what this statement costs more than a bare claim: bench/statements.py --explain).
-- waited_us: microseconds from when the row was due (its run_at before this claim) to this
-- statement's clock, for the worker's wait metric (docs/observability.md).
-- has_parents (workflows): the job was enqueued with after=[...] (deps_hold marked it),
-- so the claim reads its parents' results.
-- Jobs waiting behind their key's head (key_wait) are left out, and so out of the index
-- the claim reads (migration 0015): a claim reads one job of a key, not all of them. A
-- keyed job that passes the rule is taken only with its key's lock (the enqueue's
-- key_lock), tried without waiting and held until the claim commits: while a keyed
-- enqueue holds it, the key is skipped. A CASE, so that the lock is tried only for a job
-- that passed the rule (the planner would order plain conditions by cost, the lock
-- first). The dialect then clears the flag of each taken key's next job (key_next).
WITH picked AS (
    SELECT id, run_at AS due_at FROM "skiplock_jobs" AS c
    WHERE queue = %(queue)s AND run_at <= statement_timestamp()
    AND (status = 'running' OR (status = 'pending' AND key_wait IS NULL))
    AND NOT EXISTS (SELECT 1 FROM "skiplock_jobs_queues" AS p WHERE p.queue = %(queue)s AND p.paused)
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
