-- skiplock statements for PostgreSQL 9.5+ (SKIP LOCKED).
-- {table} is the checked, quoted table name; {prefix} its bare name for index names.
-- Every lease and run_at comes from the database's clock as the statement starts
-- (statement_timestamp()), never now(): now() is the start of the transaction, so a
-- heartbeat or claim late in a long caller's transaction (Queue.transaction) would measure
-- its lease from the past. Not clock_timestamp(): it is volatile, read again for every
-- row (one claim's jobs would differ) and cannot bound an index scan.
-- run_at is "claimable from": for a pending job its schedule, for a running job the end of
-- its lease, so one partial index serves both new jobs and jobs whose lease expired.

-- name: enqueue
-- key_wait: a keyed job enqueued while its key has a pending job waits behind it, out of
-- the claim index, until the claim that takes the key's head (or the cancel of it) clears
-- the flag of the next one (key_next). Under the key's lock (key_lock, taken before this
-- statement), so this look-up sees every claim of the key that committed before the lock
-- was granted, and a claim of the key that commits later clears this job's flag
-- (docs/sql.md, "Per-key order"). For a job without a key the look-up is not run.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s::json, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
        %(idempotency_key)s::uuid, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
        CASE WHEN %(order_key)s::text IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = %(order_key)s::text
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        THEN TRUE END)
RETURNING id

-- name: key_lock
-- Before an enqueue with a key: enqueues of one key run one at a time (until the enqueuing
-- transaction ends), so a key's ids grow in commit order and a claim that sees a keyed job
-- sees every earlier job of its key. Claims never take this lock.
SELECT pg_advisory_xact_lock(hashtext('skiplock key {prefix}'), hashtext(%(order_key)s))

-- name: queue_lock
-- A claim of a queue with a limit (queue_limits): the queue's advisory lock, held by the
-- claiming transaction, tried without waiting: while another claim of that queue holds
-- it, this claim takes nothing from the queue.
SELECT pg_try_advisory_xact_lock(hashtext('skiplock queue {prefix}'), hashtext(%(queue)s)) AS held

-- name: queue_running
-- Under the queue's lock, in a statement of its own (READ COMMITTED: a new snapshot, so it
-- sees every claim committed before the lock was granted): jobs holding a live lease.
SELECT count(*) AS n FROM {table}
WHERE queue = %(queue)s AND status = 'running' AND lease_until > statement_timestamp()

-- name: enqueue_dedupe
-- ON CONFLICT waits for a concurrent insert of the same key to commit or roll back, and
-- never raises, so it is safe inside the caller's own transaction.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, dedupe_key,
                     order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s::json, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
        %(idempotency_key)s::uuid, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
        CASE WHEN %(order_key)s::text IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = %(order_key)s::text
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        THEN TRUE END)
ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running')
DO NOTHING
RETURNING id

-- name: find_dedupe
SELECT id FROM {table}
WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running')

-- name: enqueue_many
-- key_wait as in enqueue: with a key, every job of the batch but the first waits behind it.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers, key_wait)
SELECT %(queue)s, v.payload::json, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
       v.ikey::uuid, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
       CASE WHEN %(order_key)s::text IS NULL THEN NULL
            WHEN v.n > 1 OR EXISTS (
                SELECT 1 FROM {table} AS e
                WHERE e.order_key = %(order_key)s::text
                  AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
            THEN TRUE END
FROM unnest(%(payloads)s::text[], %(keys)s::text[]) WITH ORDINALITY AS v(payload, ikey, n)
ORDER BY v.n
RETURNING id, idempotency_key

-- name: claim
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
    SELECT id, run_at AS due_at FROM {table} AS c
    WHERE queue = %(queue)s AND run_at <= statement_timestamp()
    AND (status = 'running' OR (status = 'pending' AND key_wait IS NULL))
    AND NOT EXISTS (SELECT 1 FROM {queues_table} AS p WHERE p.queue = %(queue)s AND p.paused)
    AND (c.order_key IS NULL OR CASE WHEN
        NOT EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = c.order_key AND e.id < c.id
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        AND (SELECT count(*) FROM {table} AS e
             WHERE e.order_key = c.order_key AND e.id <> c.id
               AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 1)
            < COALESCE(c.key_limit, 1)
        THEN pg_try_advisory_xact_lock(hashtext('skiplock key {prefix}'), hashtext(c.order_key))
        ELSE FALSE END)
    ORDER BY priority, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {table} AS j SET
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

-- name: claim_queues
-- As claim, over several queues: the claimable rows of those queues are sorted together.
-- Kept apart from claim on purpose: with `queue = ANY(array)` the planner cannot read the
-- index in (priority, run_at, id) order even for a one-element array, and sorts every
-- claimable row of the queue (seen: 64 ms for 180,000 pending rows, against an index
-- scan that stops after LIMIT rows with `queue = <value>`). No placeholder may appear in
-- a comment: the driver would ask for its value.
WITH picked AS (
    SELECT id, run_at AS due_at FROM {table} AS c
    WHERE queue = ANY(%(queues)s::text[]) AND run_at <= statement_timestamp()
    AND (status = 'running' OR (status = 'pending' AND key_wait IS NULL))
    AND NOT EXISTS (SELECT 1 FROM {queues_table} AS p WHERE p.queue = c.queue AND p.paused)
    AND (c.order_key IS NULL OR CASE WHEN
        NOT EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = c.order_key AND e.id < c.id
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        AND (SELECT count(*) FROM {table} AS e
             WHERE e.order_key = c.order_key AND e.id <> c.id
               AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 1)
            < COALESCE(c.key_limit, 1)
        THEN pg_try_advisory_xact_lock(hashtext('skiplock key {prefix}'), hashtext(c.order_key))
        ELSE FALSE END)
    ORDER BY priority, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {table} AS j SET
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

-- name: key_next
-- After a claim took jobs of these keys (their locks held since the claim's statement),
-- or a cancel ended one (under key_lock): each key's first pending job, now its head, no
-- longer waits. A statement of its own (READ COMMITTED: a new snapshot, taken once the
-- locks were held), so it sees every job of the keys whose enqueue committed before.
UPDATE {table} AS j SET key_wait = NULL
FROM (SELECT (SELECT e.id FROM {table} AS e
              WHERE e.order_key = k.key
                AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0
              ORDER BY e.id LIMIT 1) AS id
      FROM unnest(%(keys)s::text[]) AS k(key)) AS h
WHERE j.id = h.id AND j.key_wait

-- name: key_repair
-- The safety net (run by a claim at most every 10 s, before the claim statement):
-- a key whose first pending job waits (key_wait) is given it back. Nothing this release
-- does leaves one; the previous release's claims, which run through the migration, clear
-- no flag. One step per key that has waiting jobs (key_wait_idx), then one look-up of its
-- head; at most %(batch)s keys a run, from the key after %(after)s (the last key the
-- previous run read; NULL: from the first), so a run's cost is bounded and the runs go
-- round every key ('': keys are not empty, and sort after it in every deterministic
-- collation; a bound, not `IS NULL OR`, so that a generic plan reads the index from
-- there too). It returns the last key it read and how many it read (the dialect keeps
-- that key when the batch was full).
WITH RECURSIVE k(key, n) AS (
    SELECT min(order_key), 1 FROM {table}
    WHERE key_wait AND status = 'pending'
      AND order_key > COALESCE(%(after)s::text, '')
    UNION ALL
    SELECT (SELECT min(f.order_key) FROM {table} AS f
            WHERE f.key_wait AND f.status = 'pending' AND f.order_key > k.key), k.n + 1
    FROM k WHERE k.key IS NOT NULL AND k.n < %(batch)s
), heads AS (
    -- the heads as an array (an InitPlan), so that each is found by the primary key: as
    -- a join, the planner hashed every flagged row of a table it had no statistics of
    UPDATE {table} AS j SET key_wait = NULL
    WHERE j.id = ANY(ARRAY(
        SELECT (SELECT e.id FROM {table} AS e
                WHERE e.order_key = k.key
                  AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0
                ORDER BY e.id LIMIT 1)
        FROM k WHERE k.key IS NOT NULL))
      AND j.key_wait
)
SELECT (SELECT k.key FROM k WHERE k.key IS NOT NULL ORDER BY k.n DESC LIMIT 1) AS last_key,
       (SELECT count(k.key) FROM k) AS n

-- name: key_of
-- q.cancel(): the job's key, so that its lock is taken before the job's row.
SELECT order_key FROM {table} WHERE id = %(id)s

-- name: heartbeat
UPDATE {table}
SET lease_until = statement_timestamp() + %(lease_ms)s * interval '1 millisecond',
    run_at = statement_timestamp() + %(lease_ms)s * interval '1 millisecond'
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'

-- name: lease_of
-- The heartbeat's answer: the new lease, and whether q.cancel() asked the job to stop.
SELECT lease_until, cancel_requested FROM {table} WHERE id = %(id)s

-- name: complete
-- RETURNING has_children (workflows; also fail, cancelled, complete_many and the claim's
-- lease ends): the row as written, its latest version, so a mark committed by a child's
-- enqueue while this write waited for the row's lock is seen; only a job with the mark
-- looks for waiting children.
UPDATE {table}
SET status = 'done', result = %(result)s::json, lease_until = NULL, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children

-- name: complete_many
-- Each row is still checked against its own attempt and claim token. "(status = 'running') IS TRUE" means
-- status = 'running' (the column is NOT NULL) but keeps the planner off the claim index:
-- once statistics say few rows run, it would scan every pending row of that index for
-- each batch (measured: completion 2-3x slower with a backlog); the primary key finds
-- each row directly.
UPDATE {table} AS j
SET status = 'done', result = v.result::json, lease_until = NULL, finished_at = statement_timestamp()
FROM unnest(%(ids)s::bigint[], %(attempts)s::integer[], %(claim_ids)s::bigint[], %(results)s::text[])
     AS v(id, attempt, claim_id, result)
WHERE j.id = v.id AND j.attempt = v.attempt AND j.claim_id IS NOT DISTINCT FROM v.claim_id
  AND (j.status = 'running') IS TRUE
RETURNING j.id, j.has_children

-- name: retry
UPDATE {table}
SET status = 'pending', run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond',
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'

-- name: fail
UPDATE {table}
SET status = 'failed', lease_until = NULL, last_error = %(error)s, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children

-- name: release
-- The job back to pending now. The claim's attempt stays (the fencing token never goes
-- back) and max_attempts grows by one, so a released claim is not counted as one of the
-- job's attempts, by a failure or by a lease that ends.
UPDATE {table}
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts::bigint + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'

-- name: unclaim
-- A claim whose COMMIT lost its connection may or may not have committed: each job it
-- returned is given back as release does, if the claim did commit. Then the row is still
-- running at that attempt with the lease's end the claim wrote (no worker holds it, so
-- nobody heartbeats it). Had the claim rolled back, another claim could take the row at
-- the same attempt, but not with the same lease's end, so the fence holds.
UPDATE {table}
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts::bigint + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
  AND lease_until = %(lease_until)s::timestamptz

-- name: cancel_pending
-- q.cancel() of a job not yet claimed (pending, scheduled or waiting for its parents):
-- it is never claimed.
UPDATE {table}
SET status = 'cancelled', cancel_requested = TRUE, lease_until = NULL, finished_at = statement_timestamp()
WHERE id = %(id)s AND status IN ('pending', 'waiting')

-- name: cancel_running
-- q.cancel() of a running job: its worker sees the request at its next heartbeat.
UPDATE {table} SET cancel_requested = TRUE WHERE id = %(id)s AND status = 'running'

-- name: cancelled
-- The handler stopped on a cancel request: fenced like every write after a claim.
UPDATE {table}
SET status = 'cancelled', lease_until = NULL, last_error = %(error)s, finished_at = statement_timestamp()
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
RETURNING has_children

-- name: get
SELECT * FROM {table} WHERE id = %(id)s

-- name: wait_look
-- q.wait() by polling: the status of every job this queue's waits wait for, one statement
-- per tick however many wait (primary key look-ups; a job not listed is gone).
SELECT id, status FROM {table} WHERE id = ANY(%(ids)s::bigint[])

-- name: wait_rows
-- In the same transaction, when wait_look found jobs ended: their rows, for their waits.
SELECT * FROM {table} WHERE id = ANY(%(ids)s::bigint[])

-- name: list_jobs
-- Newest first, one page: the caller passes the last id it saw as before_id (keyset
-- pagination). The primary key is read backwards; the filters are checked on the way.
SELECT * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status = ANY(%(statuses)s::text[]))
  AND (%(all_queues)s OR queue = %(queue)s)
ORDER BY id DESC
LIMIT %(limit)s

-- name: stats
-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        count(*) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()) AS pending,
        count(*) FILTER (WHERE status = 'pending' AND run_at > statement_timestamp()) AS scheduled,
        count(*) FILTER (WHERE status = 'running' AND lease_until >= statement_timestamp()) AS running,
        count(*) FILTER (WHERE status = 'running' AND lease_until < statement_timestamp()) AS expired,
        count(*) FILTER (WHERE status = 'done') AS done,
        count(*) FILTER (WHERE status = 'failed') AS failed,
        count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
        count(*) FILTER (WHERE status = 'waiting') AS waiting,
        EXTRACT(EPOCH FROM statement_timestamp() - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()))
            AS oldest_pending_age
    FROM {table}
    WHERE %(all_queues)s OR queue = ANY(%(queues)s::text[])
) AS s
LEFT JOIN {counters_table} AS c ON c.name = 'pruned'

-- name: enqueue_ids
-- Ids and the run_at for a large batch written by COPY (which cannot RETURNING): taken from
-- the table's own sequence, so they are unique and increase in the order of the batch.
-- One row with an array: far cheaper to read than one row per id.
-- The sequence is looked up once (a scalar sub-select), not once per id.
SELECT array_agg(nextval((SELECT pg_get_serial_sequence('{table}', 'id')::regclass)) ORDER BY g)
           AS ids,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond') AS run_at
FROM generate_series(1, %(n)s) AS g

-- name: enqueue_copy
COPY {table} (id, queue, payload, priority, max_attempts, run_at, idempotency_key, headers) FROM STDIN

-- name: enqueue_copy_parents
-- A workflow's jobs that get a child next, in the same transaction: marked as written.
COPY {table} (id, queue, payload, priority, max_attempts, run_at, idempotency_key, headers,
              has_children) FROM STDIN

-- name: listen
LISTEN "{prefix}"

-- name: wake_mark
-- A worker about to wait (see migration 0006): its LISTEN session's pid, so the enqueue
-- trigger notifies. With sweep, the marks of sessions that have ended go too (a worker
-- killed while waiting left one; it only caused needless NOTIFYs).
WITH gone AS (
    DELETE FROM {idle_table}
    WHERE %(sweep)s AND pid <> %(pid)s AND pid NOT IN (SELECT pid FROM pg_stat_activity)
)
INSERT INTO {idle_table} (pid) VALUES (%(pid)s) ON CONFLICT (pid) DO NOTHING

-- name: wake_settled
-- After the mark committed: true once no enqueuing transaction holds the trigger's shared
-- lock, i.e. every enqueuer that looked for marks before this one was visible has ended.
-- A try: an exclusive request that waited would hold up every later enqueuer.
SELECT pg_try_advisory_xact_lock(hashtext('skiplock wake {prefix}')) AS settled

-- name: wake_unmark
DELETE FROM {idle_table} WHERE pid = %(pid)s

-- name: listen_cancel
-- Cancel requests of running jobs (q.cancel), on a channel of their own: the payload is
-- the job's id.
LISTEN "{prefix}_cancel"

-- name: cancel_notify
-- Sent in the cancel request's transaction, so a listener hears it once it commits.
SELECT pg_notify('{prefix}_cancel', %(payload)s)

-- name: retry_failed
-- failed → pending, now, with max_attempts more attempts than it has used (the fencing
-- token never goes back). A job whose dedupe_key is held by an active job stays failed.
-- Not waiting (key_wait): an older job of its key than the key's pending ones, it is the
-- key's head now (the previous head, not flagged, is read by claims until it runs).
UPDATE {table} AS j
SET status = 'pending', run_at = statement_timestamp(), lease_until = NULL, finished_at = NULL,
    key_wait = NULL,
    max_attempts = LEAST(2147483647, j.attempt::bigint + COALESCE(%(attempts)s, j.max_attempts))
WHERE j.status = 'failed'
  AND (%(all_ids)s OR j.id = ANY(%(ids)s::bigint[]))
  AND (%(all_queues)s OR j.queue = ANY(%(queues)s::text[]))
  AND (j.dedupe_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM {table} AS a
        WHERE a.dedupe_key = j.dedupe_key AND a.status IN ('pending', 'running')))

-- name: prune
-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
-- A parent whose child has not finished stays (the child reads its result when claimed).
DELETE FROM {table} WHERE id IN (
    SELECT id FROM {table} AS f
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < statement_timestamp() - %(older_ms)s * interval '1 millisecond'
      AND NOT EXISTS (
        SELECT 1 FROM {deps_table} AS d JOIN {table} AS c ON c.id = d.child
        WHERE d.parent = f.id AND c.status IN ('waiting', 'pending', 'running'))
    LIMIT %(limit)s)

-- name: count_pruned
-- In the prune batch's transaction: the table's running total of pruned jobs.
UPDATE {counters_table} SET total = total + %(deleted)s, updated_at = statement_timestamp()
WHERE name = 'pruned'

-- name: lock_timeout
-- How long the next lock_acquire in this transaction waits (milliseconds, as text).
SELECT set_config('lock_timeout', %(wait_ms)s, true)

-- name: lock_acquire
-- Session-level: held until lock_release or until the connection ends, whatever the
-- transaction does. Waits up to lock_timeout, then raises 55P03.
SELECT pg_advisory_lock(%(key)s)

-- name: lock_check
SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
      AND ((classid::bigint << 32) | objid::bigint) = %(key)s
) AS held

-- name: lock_release
SELECT pg_advisory_unlock(%(key)s)

-- name: live_leases
-- Single mode, after taking the lock: running jobs whose lease has not ended, or ended
-- less than %(margin_s)s seconds ago, on the statement's clock. A holder cut off from the
-- database cannot heartbeat, so its leases end while its handlers run; once back, its
-- heartbeats renew them: the margin gives it time to.
SELECT id, attempt, claim_id FROM {table}
WHERE status = 'running'
  AND lease_until > statement_timestamp() - %(margin_s)s * interval '1 second'
LIMIT %(limit)s

-- name: session_id
SELECT pg_backend_pid() AS session

-- name: count_sessions
-- How many of these session ids are still connected (tests and operators count a pool).
SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY(%(sessions)s::int[])

-- name: kill_session
SELECT pg_terminate_backend(%(session)s)

-- name: clock
-- The database's clock, not the transaction's start: ticks fall due by it.
SELECT clock_timestamp() AS now

-- name: tick_claim
-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once:
-- a second insert of the same tick waits for the first's transaction, then inserts
-- nothing (0 rows) if it committed.
INSERT INTO {ticks_table} (schedule, tick) VALUES (%(schedule)s, %(tick)s)
ON CONFLICT (schedule, tick) DO NOTHING

-- name: tick_last
SELECT max(tick) AS tick FROM {ticks_table} WHERE schedule = %(schedule)s

-- name: tick_prune
DELETE FROM {ticks_table} WHERE schedule = %(schedule)s AND tick < %(before)s

-- name: schema_session
-- The migrating connection: an ALTER TABLE that waits for a lock longer than this gives
-- up (and is tried again) rather than queueing every worker's statement behind it.
SET lock_timeout = '5s'

-- name: schema_state
SELECT to_regclass('{table}') IS NOT NULL AS has_jobs,
       to_regclass('{version_table}') IS NOT NULL AS has_version


-- name: schema_catalog
-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, attname::text AS name FROM pg_attribute
 WHERE attrelid = to_regclass('{table}') AND attnum > 0 AND NOT attisdropped
UNION ALL
SELECT 'index', c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = to_regclass('{table}')

-- name: schema_version
SELECT max(version) AS version FROM {version_table}

-- name: schema_create
CREATE TABLE IF NOT EXISTS {version_table} (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: schema_record
INSERT INTO {version_table} (version, name) VALUES (%(version)s, %(name)s)
ON CONFLICT (version) DO NOTHING

-- name: uninstall
-- DROP TABLE takes the trigger with it; the trigger function is dropped on its own.
DROP TABLE IF EXISTS {deps_table};
DROP TABLE IF EXISTS {table};
DROP TABLE IF EXISTS {ticks_table};
DROP TABLE IF EXISTS {idle_table};
DROP TABLE IF EXISTS {counters_table};
DROP TABLE IF EXISTS {queues_table};
DROP TABLE IF EXISTS {rates_table};
DROP TABLE IF EXISTS {workers_table};
DROP TABLE IF EXISTS {version_table};
DROP FUNCTION IF EXISTS "{prefix}_notify"();
DROP FUNCTION IF EXISTS "{prefix}_finished"()

-- ==== pause and rate limits ====

-- name: queue_pause
-- q.pause / q.resume: the queue's flag, its row made the first time. A claim reads it in
-- the claim statement itself: one whose snapshot is taken after this commits takes
-- nothing from a paused queue.
INSERT INTO {queues_table} (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, statement_timestamp())
ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at

-- name: resume_notify
-- In the resume's transaction: idle workers' listeners hear it once it commits, and claim.
SELECT pg_notify('{prefix}', '')

-- name: queues_paused
SELECT queue FROM {queues_table} WHERE paused ORDER BY queue

-- name: rate_window
-- Under the queue's claim lock, in a statement of its own (READ COMMITTED: it sees every
-- claim committed before the lock was granted): the jobs claimed from the queue in the
-- last per_ms milliseconds, and how long until the oldest of those claims leaves the
-- window (milliseconds; NULL when there is none); now: this statement's time, from which
-- a claim of jobs with a key rate starts their leases (docs/control.md).
SELECT COALESCE(sum(n), 0) AS used,
       EXTRACT(EPOCH FROM min(claimed_at) - statement_timestamp()) * 1000 + %(per_ms)s AS wait_ms,
       statement_timestamp() AS now
FROM {rates_table}
WHERE queue = %(queue)s
  AND claimed_at > statement_timestamp() - %(per_ms)s * interval '1 millisecond'

-- name: rate_record
-- After the claim, in its transaction: this statement starts after the claim's, so its
-- time is never earlier than the claim's (docs/control.md: why that keeps the limit).
INSERT INTO {rates_table} (queue, claimed_at, n) VALUES (%(queue)s, statement_timestamp(), %(n)s)

-- name: rate_prune
-- The queue's claims that have left the window are counted by no claim again.
DELETE FROM {rates_table}
WHERE queue = %(queue)s
  AND claimed_at <= statement_timestamp() - %(per_ms)s * interval '1 millisecond'

-- name: key_admit
-- Rate limits per key (key_rate): the jobs of one key this claim admits, under the key's
-- lock, after rate_window counted the key's window: their leases start at that count's
-- time (bound: rate_window's now plus the lease), so a job's start is never earlier than
-- the count that admitted it and never later than the rate_record that logs it
-- (docs/control.md: why that keeps the limit). Fenced by this claim's token.
UPDATE {table}
SET lease_until = %(lease_until)s::timestamptz, run_at = %(lease_until)s::timestamptz
WHERE id = ANY(%(ids)s::bigint[]) AND claim_id = %(claim_id)s::bigint AND status = 'running'

-- name: key_defer
-- The jobs of one key this claim took but the key's window had no room for: back to
-- pending as they were before the claim (the attempt it added taken back: the claim has
-- not committed, so no holder ever saw that attempt, and the new token stays), due when
-- the window has room. A deferred job stays its key's head: while it is pending, no later
-- job of its key is claimable. Fenced by this claim's token.
UPDATE {table}
SET status = 'pending', attempt = attempt - 1, lease_until = NULL,
    run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond'
WHERE id = ANY(%(ids)s::bigint[]) AND claim_id = %(claim_id)s::bigint AND status = 'running'

-- name: rates_forget
-- In a prune's last batch: rate records older than the longest window (a week), which no
-- claim counts again; a claim prunes only its own queue's or key's, so a key never claimed
-- again would keep its records without this.
DELETE FROM {rates_table} WHERE claimed_at < statement_timestamp() - interval '7 days'

-- ==== dashboard and workers ====

-- name: worker_register
-- A worker process's row in the live worker list (migration 0011), written as it starts.
INSERT INTO {workers_table} (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
        statement_timestamp(), statement_timestamp())
ON CONFLICT (id) DO UPDATE SET in_flight = 0, last_seen = statement_timestamp()

-- name: worker_forget
-- Rows of workers not seen for %(older_s)s seconds (killed long ago): dropped as a worker
-- registers, so the list does not grow without end.
DELETE FROM {workers_table}
WHERE last_seen < statement_timestamp() - %(older_s)s * interval '1 second'

-- name: worker_beat
-- On the worker's heartbeat: jobs in flight, and when it was last seen (0 rows: its row
-- was forgotten meanwhile, and the worker writes it again).
UPDATE {workers_table} SET in_flight = %(in_flight)s, last_seen = statement_timestamp()
WHERE id = %(id)s

-- name: worker_unregister
DELETE FROM {workers_table} WHERE id = %(id)s

-- name: worker_list
-- seen_ago on the database's clock: a worker is gone once it is several of its beats.
SELECT id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen,
       EXTRACT(EPOCH FROM statement_timestamp() - last_seen) AS seen_ago
FROM {workers_table}
ORDER BY started_at, id

-- name: queue_overview
-- The active jobs of every queue, from the claim index (a partial index on the running
-- rows and the pending ones not waiting behind their key) and the key_wait index (the
-- waiting ones): together they hold the backlog, never the finished jobs.
SELECT queue,
       count(*) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()) AS pending,
       count(*) FILTER (WHERE status = 'pending' AND run_at > statement_timestamp()) AS scheduled,
       count(*) FILTER (WHERE status = 'running' AND lease_until >= statement_timestamp()) AS running,
       count(*) FILTER (WHERE status = 'running' AND lease_until < statement_timestamp()) AS expired,
       EXTRACT(EPOCH FROM statement_timestamp()
           - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= statement_timestamp()))
           AS oldest_pending_age
FROM (SELECT queue, status, run_at, lease_until FROM {table}
      WHERE status = 'running' OR (status = 'pending' AND key_wait IS NULL)
      UNION ALL
      SELECT queue, status, run_at, lease_until FROM {table}
      WHERE key_wait AND status = 'pending') AS a
GROUP BY queue

-- name: queue_recent
-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index; at most cap rows are read (the caller shows "cap or more").
SELECT queue, status,
       floor(EXTRACT(EPOCH FROM statement_timestamp() - finished_at) / 60)::integer AS minute,
       count(*) AS n
FROM (
    SELECT queue, status, finished_at FROM {table}
    WHERE status IN ('done', 'failed')
      AND finished_at >= statement_timestamp() - %(window_s)s * interval '1 second'
    LIMIT %(cap)s
) AS r
GROUP BY queue, status, minute

-- name: ticks_overview
-- The periodic ledger: each schedule's latest tick (the ledger keeps only recent ones).
SELECT schedule, max(tick) AS last_tick, count(*) AS ticks
FROM {ticks_table}
GROUP BY schedule
ORDER BY schedule

-- name: list_jobs_task
-- list_jobs of one task (an App task's payload is {"task": name, ...}).
SELECT * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status = ANY(%(statuses)s::text[]))
  AND (%(all_queues)s OR queue = %(queue)s)
  AND payload->>'task' = %(task)s
ORDER BY id DESC
LIMIT %(limit)s

-- ==== job control: snooze, progress, dedupe windows, debounce ====

-- name: snooze
-- The job back to pending, due in delay_ms, no error recorded. As release: the claim's
-- attempt stays (the fencing token) and max_attempts grows by one, so a snooze uses up no
-- attempt. A job snoozed max_snoozes times already is not matched: the dialect then fails
-- it (fenced, by fail).
UPDATE {table}
SET status = 'pending', run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond',
    lease_until = NULL, max_attempts = LEAST(2147483647, max_attempts::bigint + 1),
    snoozes = COALESCE(snoozes, 0) + 1
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
  AND COALESCE(snoozes, 0) < %(max_snoozes)s

-- name: set_progress
UPDATE {table} SET progress = %(progress)s::json
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'

-- name: find_dedupe_window
-- Under the key's lock (key_lock): the job whose dedupe_for window is still open.
SELECT id FROM {table}
WHERE dedupe_key = %(dedupe_key)s AND dedupe_until > statement_timestamp()
ORDER BY id DESC LIMIT 1

-- name: find_debounce
-- Under the key's lock: the newest pending job of a debounce key.
SELECT id FROM {table}
WHERE debounce_key = %(debounce_key)s AND status = 'pending'
ORDER BY id DESC LIMIT 1

-- name: debounce
-- Only while still pending: a claim that took the job first leaves 0 rows (the dialect
-- then enqueues a new job). The claim skips the row while this holds its lock, and then
-- finds it due later.
UPDATE {table}
SET payload = %(payload)s::json, headers = %(headers)s,
    run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond'
WHERE id = %(id)s AND status = 'pending'

-- name: enqueue_control
-- enqueue_dedupe with the window's end (dedupe_ms > 0) or a debounce key.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, dedupe_key,
                     order_key, key_limit, key_rate, key_rate_ms, dedupe_until, debounce_key, headers,
                     key_wait)
VALUES (%(queue)s, %(payload)s::json, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond'),
        %(idempotency_key)s::uuid, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
        CASE WHEN %(dedupe_ms)s > 0
             THEN statement_timestamp() + %(dedupe_ms)s * interval '1 millisecond' END,
        %(debounce_key)s, %(headers)s,
        CASE WHEN %(order_key)s::text IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = %(order_key)s::text
              AND (CASE e.status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) = 0)
        THEN TRUE END)
ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running')
DO NOTHING
RETURNING id

-- name: listen_finished
-- q.wait: the ends of waited jobs (the trigger of migration 0012); the payload is the id.
LISTEN "{prefix}_finished"

-- name: wait_mark
-- q.wait, before it reads the job: from now on the job's end notifies. A completion that
-- races this waits for its row lock (or this for the completion's), so either it sees the
-- mark or the read that follows sees the job finished.
UPDATE {table} SET waited = TRUE WHERE id = %(id)s AND waited IS NOT TRUE

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in {deps_table}. Id lists are bound as one JSON
-- array (the same text on every database: SQL Server's 2,100 parameters would not hold a
-- 10,000-job group's ids). Locks: an enqueue locks its parents (and marks them
-- has_children), a parent's end (completion, failure, cancel) updates the parent and then,
-- when the update returned the mark, locks its waiting children FOR UPDATE; so a parent
-- cannot end between an enqueue's read of its status and the commit of the child's edges,
-- and two parents of one child ending together settle it one after the other, the second
-- seeing the first's end.

-- name: deps_lock_parents
-- The parents of a new job, each as it is now, locked until the enqueue commits (FOR NO
-- KEY UPDATE, as an UPDATE locks: deps_mark writes them next).
SELECT id, status FROM {table}
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
ORDER BY id
FOR NO KEY UPDATE

-- name: deps_mark
-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE {table} SET has_children = TRUE
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND has_children IS NULL

-- name: deps_add
-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO {deps_table} (child, parent, run_on_failure)
SELECT (e->>0)::bigint, (e->>1)::bigint, %(run)s
FROM json_array_elements(%(edges)s::json) AS e

-- name: deps_copy
-- deps_add for many edges (a chord's callback), written by COPY.
COPY {deps_table} (child, parent, run_on_failure) FROM STDIN

-- name: deps_hold
-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (not in the claim
-- index).
UPDATE {table}
SET status = CASE WHEN %(hold)s THEN 'waiting' ELSE status END, has_parents = TRUE
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status = 'pending'

-- name: deps_children
-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM {table} AS c
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM {deps_table} AS d
    WHERE d.parent IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json)))
ORDER BY c.id
FOR UPDATE

-- name: deps_parents
-- Every parent of these children, with its status now (NULL: pruned).
SELECT d.child, d.parent, d.run_on_failure, p.status
FROM {deps_table} AS d LEFT JOIN {table} AS p ON p.id = d.parent
WHERE d.child IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))

-- name: deps_release
-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE {table} SET status = 'pending', run_at = GREATEST(run_at, statement_timestamp())
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status = 'waiting'

-- name: deps_cancel
-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE {table}
SET status = 'cancelled', last_error = %(error)s, finished_at = statement_timestamp()
WHERE id IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))
  AND status IN ('waiting', 'pending')

-- name: deps_results
-- The parents' results of claimed jobs (job.parent_results).
SELECT d.child, d.parent, p.result
FROM {deps_table} AS d JOIN {table} AS p ON p.id = d.parent
WHERE d.child IN (SELECT value::bigint FROM json_array_elements_text(%(id_list)s::json))

-- name: deps_wake_lock
-- Released jobs wake waiting workers as the enqueue trigger does (migration 0006): the
-- shared lock first, then the look for marks.
SELECT pg_advisory_xact_lock_shared(hashtext('skiplock wake {prefix}'))

-- name: deps_wake
SELECT pg_notify('{prefix}', '')
WHERE current_setting('transaction_isolation') <> 'read committed'
   OR EXISTS (SELECT 1 FROM {idle_table})

-- name: deps_prune
-- In a prune batch's transaction, after it deleted jobs: the edges of children that no
-- longer exist (read through the primary key of the jobs table, one look-up per edge).
DELETE FROM {deps_table}
WHERE NOT EXISTS (SELECT 1 FROM {table} AS j WHERE j.id = {deps_table}.child)
