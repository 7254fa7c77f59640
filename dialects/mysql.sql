-- skiplock statements for MySQL 8.0.1+ and MariaDB 10.6+ (SKIP LOCKED), InnoDB.
-- {table} is the checked, quoted table name; {prefix} its bare name for index names.
-- The table itself comes from the numbered files in migrations/mysql/.
-- Times are DATETIME(6) in UTC from UTC_TIMESTAMP(6), the database's clock; the session
-- time zone never matters. UTC_TIMESTAMP() is the time the statement began (one value per
-- statement), not the transaction: a lease set late in a caller's long transaction starts
-- then (tests/conformance/test_lease.py, ..._measured_when_the_statement_runs).
-- run_at is "claimable from": for a pending job its schedule, for a running job the end
-- of its lease. MySQL has no partial index, so the stored column `claimable` (1 while
-- pending or running, else NULL) and `key_wait` (1 on a pending job waiting behind its
-- key's head) lead the claim index: a claim reads (1, NULL, queue, ...), the running jobs
-- and the pending ones not waiting, never a finished row (migration 0017; 0016 built it
-- on a VIRTUAL column; version 1's index on `claimable` alone went in 0017). `key_waiting` (VIRTUAL: the key of a waiting
-- pending job) leads the index of the waiting ones.
-- The key, debounce and finished indexes read VIRTUAL columns (key_status, debounce_status,
-- finished_status: the status where the index concerns the row, else NULL; migration
-- 0014), so a claim or an end of a job with no key writes none of their entries.

-- name: enqueue
-- key_wait: a keyed job enqueued while its key has a pending job waits behind it, out of
-- the claim index (key_wait), until the claim that takes the key's head (or the cancel
-- of it) clears the flag of the next one (key_next). Under the key's lock (key_lock, taken
-- before this statement), so this look-up sees every claim of the key that committed
-- before the lock was granted, and a claim of the key that commits later clears this
-- job's flag (docs/sql.md, "Per-key order"). For a job without a key the look-up is not run.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, created_at,
                     order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)

-- name: key_lock
-- Before an enqueue with a key: the key's row in <table>_keys, locked (ON DUPLICATE KEY
-- UPDATE takes an exclusive lock) until the enqueuing transaction ends, so enqueues of
-- one key run one at a time and its ids grow in commit order: a claim that sees a keyed
-- job sees every earlier job of its key. Claims never read this table.
INSERT INTO {keys_table} (order_key) VALUES (%(order_key)s)
ON DUPLICATE KEY UPDATE order_key = order_key

-- name: queue_lock
-- A claim of a queue with a limit (queue_limits): the queue's row in <table>_keys
-- (%(lock_name)s, a name no key can have), locked by the claiming transaction with SKIP
-- LOCKED: while another claim of that queue holds it, no row comes back and this claim
-- takes nothing from the queue. The row is made once by queue_lock_row.
SELECT 1 AS held FROM {keys_table} WHERE order_key = %(lock_name)s FOR UPDATE SKIP LOCKED

-- name: queue_lock_exists
-- A plain (consistent, non-locking) read: does the queue's lock row exist at all?
SELECT 1 AS found FROM {keys_table} WHERE order_key = %(lock_name)s

-- name: queue_lock_row
INSERT IGNORE INTO {keys_table} (order_key) VALUES (%(lock_name)s)

-- name: queue_running
-- Under the queue's lock, in a statement of its own (READ COMMITTED: a fresh read view, so
-- it sees every claim committed before the lock was granted): jobs holding a live lease.
SELECT count(*) AS n FROM {table} FORCE INDEX (`{prefix}_ready`)
WHERE claimable = 1 AND key_wait IS NULL AND queue = %(queue)s AND status = 'running'
  AND lease_until > UTC_TIMESTAMP(6)

-- name: enqueue_dedupe
-- On a duplicate active key, LAST_INSERT_ID(id) hands back the existing job's id; a
-- duplicate-key error would be a statement error, this is none.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, created_at, order_key, key_limit, key_rate, key_rate_ms, headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, %(dedupe_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
        %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)

-- name: find_dedupe
SELECT id FROM {table} WHERE dedupe_active = %(dedupe_key)s

-- name: ids_in_range
-- MySQL: a batch's rows read back from its first id (LAST_INSERT_ID()) by the primary key:
-- one range instead of a look-up of each key. The ids of one INSERT grow, by
-- @@auto_increment_increment; other inserts may take ids in between (the dialect keeps the
-- rows whose idempotency keys are its own, and reads any it missed by ids_by_key).
-- One row, the [id, key] pairs as one JSON array (NULL: none): decoded by json's C
-- scanner, 1,000 pairs cost the client less than 1,000 rows (docs/performance.md).
SELECT JSON_ARRAYAGG(JSON_ARRAY(id, idempotency_key)) AS pairs FROM {table}
WHERE id BETWEEN %(first)s AND %(first)s + (%(n)s - 1) * @@auto_increment_increment

-- name: ids_by_key
-- A batch's ids read back by idempotency key (MySQL has no INSERT … RETURNING): the keys
-- are one bound JSON array, in the table's collation so that each is one look-up of the
-- unique key (1,000 keys: 4.5 ms against 6.3 ms for an IN list of 1,000 bound values).
SELECT t.id, t.idempotency_key
FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (k CHAR(36) COLLATE utf8mb4_bin PATH '$')) AS j
JOIN {table} AS t ON t.idempotency_key = j.k

-- name: claim_pick
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
FROM {table} AS c FORCE INDEX (`{prefix}_ready`)
WHERE claimable = 1 AND c.key_wait IS NULL AND queue = %(queue)s AND run_at <= UTC_TIMESTAMP(6)
  AND NOT EXISTS (SELECT 1 FROM {queues_table} AS p WHERE p.queue = %(queue)s AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        {no_earlier_pending}
        AND (SELECT COUNT(*) FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
             WHERE e.order_key = c.order_key AND e.key_status = 'running' AND e.id <> c.id)
            < COALESCE(c.key_limit, 1)))
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: claim_pick_queues
SELECT id, queue, payload, priority, status, attempt, max_attempts, idempotency_key,
       dedupe_key, last_error, result, created_at, cancel_requested, order_key, snoozes,
       UTC_TIMESTAMP(6) AS db_now, headers,
       TIMESTAMPDIFF(MICROSECOND, run_at, UTC_TIMESTAMP(6)) AS waited_us, has_parents,
       key_rate, key_rate_ms
FROM {table} AS c FORCE INDEX (`{prefix}_ready`)
WHERE claimable = 1 AND c.key_wait IS NULL AND queue IN (%(queues)s)
  AND run_at <= UTC_TIMESTAMP(6)
  AND NOT EXISTS (SELECT 1 FROM {queues_table} AS p WHERE p.queue = c.queue AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        {no_earlier_pending}
        AND (SELECT COUNT(*) FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
             WHERE e.order_key = c.order_key AND e.key_status = 'running' AND e.id <> c.id)
            < COALESCE(c.key_limit, 1)))
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: no_earlier_pending
-- The claims' test (a) "no earlier job of the key is pending", put in place of
-- {no_earlier_pending} above, on MySQL and MariaDB: the key's first pending entry only
-- (LIMIT 1; MariaDB's form before migration 0016, where NOT EXISTS cost it 3.5-5.3 ms a pick
-- against 2.1-3.1 on 10,000 grouped keyed jobs, while MySQL 9.7 was faster with NOT EXISTS,
-- 4.7-5.2 against 5.7-6.0: a comparison made before 0016, and not made again). Neither server
-- can bound a NOT EXISTS look-up by e.id < c.id (an outer reference): it read the key's
-- pending entries in id order and checked each, every one of them for a key's first job,
-- which since migration 0016 is the one job of a hot key a claim reads. ORDER BY the whole
-- index prefix: with `ORDER BY e.id` MySQL 9.7 read and sorted every pending entry of the
-- key (a pick on 5,000 jobs of one key: 5,003 index reads against 4, Handler_read_next). A
-- job that is running (an ended lease) passes when the key's first pending job is later.
COALESCE((
            SELECT e.id FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
            WHERE e.order_key = c.order_key AND e.key_status = 'pending'
            ORDER BY e.order_key, e.key_status, e.id LIMIT 1), c.id) >= c.id

-- name: key_try
-- The enqueue locks (key_lock's rows) of the keys a claim picked jobs of, tried without
-- waiting: a key whose row does not come back is held by a keyed enqueue (or has no row
-- yet: key_rows), and its job is not taken. Held until the claim commits.
SELECT k.order_key FROM {keys_table} AS k
WHERE k.order_key IN (
    SELECT j.name FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
        name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j)
FOR UPDATE SKIP LOCKED

-- name: key_rows
-- Which of these keys have a lock row at all (a consistent, non-locking read).
SELECT k.order_key FROM {keys_table} AS k
WHERE k.order_key IN (
    SELECT j.name FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
        name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j)

-- name: key_next
-- After a claim took jobs of these keys (their lock rows held since key_try), or a cancel
-- ended one (under key_lock): each key's first pending job, now its head, no longer waits.
-- A statement of its own (READ COMMITTED: a fresh read view, taken once the locks were
-- held), so it sees every job of the keys whose enqueue committed before.
UPDATE (SELECT (SELECT e.id FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
              WHERE e.order_key = k.name AND e.key_status = 'pending'
              ORDER BY e.order_key, e.key_status, e.id LIMIT 1) AS id
      FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
          name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS k) AS h
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = h.id
SET t.key_wait = NULL
WHERE t.key_wait = 1

-- name: key_repair_keys
-- The safety net (run by a claim at most every 10 s, before its pick): a key whose
-- first pending job waits (key_wait) is given it back. Nothing this release does leaves
-- one; the previous release's claims, which run through the migration, clear no flag.
-- Each run reads at most %(batch)s entries of the waiting jobs' index (key_waiting), from
-- the key after the last one the previous run read (%(after)s; NULL: from the first), so
-- its cost is bounded whatever the number of waiting jobs, and the runs go round every
-- key: a key is a step (`> after` skips the rest of its entries), however many jobs wait
-- in it. Neither server bounds a step from one key to the next within one statement (a
-- recursive CTE's `key_waiting > previous key` scanned the index from its start), nor
-- chose a loose index scan. The keys it read, each once, in the index's order, with how
-- many entries of each it read (the dialect keeps the last key when the batch was full).
-- A plain SELECT here and in key_repair: a consistent read that waits for no lock (an
-- UPDATE joined to these reads locked what it read, and waited for a row a user's open
-- transaction inserted); key_repair_take then clears the flag of the heads it names
-- whose rows are not locked.
SELECT w.name, COUNT(*) AS n FROM
    (SELECT f.key_waiting AS name FROM {table} AS f FORCE INDEX (`{prefix}_key_wait`)
     WHERE f.key_waiting > %(after)s OR (%(after)s IS NULL AND f.key_waiting IS NOT NULL)
     ORDER BY f.key_waiting, f.id LIMIT %(batch)s) AS w
GROUP BY w.name ORDER BY w.name

-- name: key_repair
-- Of the keys key_repair_keys read (%(keys)s, a JSON array), the heads still flagged:
-- each key's first pending job from the key index.
SELECT h.id FROM
    (SELECT (SELECT e.id FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
             WHERE e.order_key = k.name AND e.key_status = 'pending'
             ORDER BY e.order_key, e.key_status, e.id LIMIT 1) AS id
     FROM JSON_TABLE(%(keys)s, '$[*]' COLUMNS (
         name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS k) AS h
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = h.id
WHERE t.key_wait = 1

-- name: key_repair_running
-- The repair's second part: a running job that kept its flag (a claim of a release before
-- 0016 took it) is out of the claim index's claimable range (claimable, key_wait IS NULL,
-- ...), so its lease, should it end, would not be claimed again: its flag is cleared too.
-- The flagged range of the claim index holds those jobs and every waiting pending one;
-- each run reads at most %(batch)s of its entries (and their rows, for the status), from
-- the entry after the last one the previous run read ((queue, priority, run_at, id),
-- spelled out so that both servers read it as ranges of the index, in its order; queue
-- NULL: from the start). The running ones come back, and the last entry read (last = 1)
-- when the batch was full.
SELECT y.id, y.status, y.queue, y.priority, y.run_at, y.i = %(batch)s AS last FROM
    (SELECT x.id, x.status, x.queue, x.priority, x.run_at,
            ROW_NUMBER() OVER (ORDER BY x.queue, x.priority, x.run_at, x.id) AS i
     FROM (SELECT r.id, r.status, r.queue, r.priority, r.run_at
           FROM {table} AS r FORCE INDEX (`{prefix}_ready`)
           WHERE r.claimable = 1 AND r.key_wait = 1
             AND (%(queue)s IS NULL OR r.queue > %(queue)s
                  OR (r.queue = %(queue)s AND (r.priority > %(priority)s
                      OR (r.priority = %(priority)s AND (r.run_at > %(run_at)s
                          OR (r.run_at = %(run_at)s AND r.id > %(id)s))))))
           ORDER BY r.queue, r.priority, r.run_at, r.id LIMIT %(batch)s) AS x) AS y
WHERE y.status = 'running' OR y.i = %(batch)s

-- name: key_repair_lock
-- The heads key_repair found, locked, those another transaction holds skipped (the next
-- repair finds them again): a claim waits for no one.
SELECT id FROM {table}
WHERE id IN (SELECT j.id FROM JSON_TABLE(%(ids)s, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j)
  AND key_wait = 1
FOR UPDATE SKIP LOCKED

-- name: key_repair_take
-- The heads key_repair_lock locked: they wait no longer. The list first, each row by its
-- primary key (as claim_take): with `id IN (SELECT ... JSON_TABLE ...)` MariaDB 10.11
-- read the whole table through its primary key for three ids.
UPDATE JSON_TABLE(%(ids)s, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = j.id
SET t.key_wait = NULL
WHERE t.key_wait = 1

-- name: key_of
-- q.cancel(): the job's key, so that its lock is taken before the job's row.
SELECT order_key FROM {table} WHERE id = %(id)s

-- name: claim_take
-- Compare-and-set, so the claim is safe even where the pick's lock did not hold (a server
-- whose SKIP LOCKED does not lock, another isolation level): a row is taken only if it is
-- still claimable now at the attempt the pick saw. %(pairs)s is one bound JSON array of the
-- picked rows' [id, attempt] pairs (one parameter, not two per row: the driver formats each
-- bound value in Python); each pair finds its row by the primary key. Every change of state
-- either adds to the attempt (another claim) or makes the row unclaimable now (done, failed,
-- retried later, heartbeated), so two claims that read the same row cannot both take it:
-- InnoDB makes the second UPDATE wait for the first one's row lock, then finds the attempt
-- changed. The bound list first (STRAIGHT_JOIN) and each row by its primary key (FORCE
-- INDEX), here and in every UPDATE joined to a bound list of ids: on a small table MySQL
-- 9.7 and MariaDB 10.11 read the table (or the claim index) first instead, locking every
-- row they passed, and a claim waited for a user's open transaction that was completing
-- another job (test_a_claim_waits_for_no_transaction_that_completes_another_job); with
-- the list first but no hint, MariaDB 10.11 still scanned a two-row table for its rows
-- once version 1's claim index was gone.
UPDATE JSON_TABLE(%(pairs)s, '$[*]' COLUMNS (id BIGINT PATH '$[0]', at INT PATH '$[1]')) AS p
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at
SET t.attempt = t.attempt + 1, t.status = 'running', t.lease_until = %(lease_until)s,
    t.run_at = %(lease_until)s, t.finished_at = NULL, t.claim_id = %(claim_id)s
WHERE t.claimable = 1 AND t.run_at <= UTC_TIMESTAMP(6)

-- name: claim_which
-- After a take that matched fewer rows than it named: the picked rows as they are now,
-- in this transaction (which sees its own changes).
SELECT id, attempt, lease_until, claim_id FROM {table}
WHERE id IN (%(ids)s) AND status = 'running'

-- name: claim_expire
-- Compare-and-set like claim_take (the same %(pairs)s): only a row still running at the
-- attempt the pick saw, with its lease still ended (its worker may have completed or
-- heartbeated it meanwhile).
UPDATE JSON_TABLE(%(pairs)s, '$[*]' COLUMNS (id BIGINT PATH '$[0]', at INT PATH '$[1]')) AS p
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at
SET t.status = 'failed', t.lease_until = NULL, t.finished_at = UTC_TIMESTAMP(6),
    t.last_error = CONCAT('lease expired: attempt ', t.attempt, ' of ', t.max_attempts,
                          ' did not finish before its lease ended (worker died or stalled)')
WHERE t.status = 'running' AND t.run_at <= UTC_TIMESTAMP(6)

-- name: heartbeat
UPDATE {table}
SET lease_until = TIMESTAMPADD(MICROSECOND, %(lease_ms)s * 1000, UTC_TIMESTAMP(6)),
    run_at = TIMESTAMPADD(MICROSECOND, %(lease_ms)s * 1000, UTC_TIMESTAMP(6))
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'

-- name: lease_of
-- The heartbeat's answer: the new lease, and whether q.cancel() asked the job to stop.
SELECT lease_until, cancel_requested FROM {table} WHERE id = %(id)s

-- name: complete
-- marked (workflows; also fail, cancelled and complete_held): 0 matches only a row without
-- has_children, 1 any row. MySQL has no UPDATE ... RETURNING: a job's end is written with
-- 0 first, and only when that matched nothing again with 1; a match then means the job
-- has children (or none matched: the lease was lost). The UPDATE reads the row's latest
-- version, after any enqueue holding it committed, so a child's mark is never missed.
UPDATE {table}
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND (%(marked)s = 1 OR has_children IS NULL)

-- name: retry
UPDATE {table}
SET status = 'pending', run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6)),
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'

-- name: fail
UPDATE {table}
SET status = 'failed', lease_until = NULL, last_error = %(error)s, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND (%(marked)s = 1 OR has_children IS NULL)

-- name: release
-- The job back to pending now. The claim's attempt stays (the fencing token never goes
-- back) and max_attempts grows by one, so a released claim is not counted as one of the
-- job's attempts, by a failure or by a lease that ends.
UPDATE {table}
SET status = 'pending', run_at = UTC_TIMESTAMP(6), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'

-- name: unclaim
-- A claim whose COMMIT lost its connection may or may not have committed: each job it
-- returned is given back as release does, if the claim did commit. Then the row is still
-- running at that attempt with the lease's end the claim wrote (no worker holds it, so
-- nobody heartbeats it). Had the claim rolled back, another claim could take the row at
-- the same attempt, but not with the same lease's end, so the fence holds.
UPDATE {table}
SET status = 'pending', run_at = UTC_TIMESTAMP(6), lease_until = NULL,
    max_attempts = LEAST(2147483647, max_attempts + 1)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND lease_until = %(lease_until)s

-- name: cancel_pending
-- q.cancel() of a job not yet claimed (pending, scheduled or waiting for its parents):
-- it is never claimed.
UPDATE {table}
SET status = 'cancelled', cancel_requested = 1, lease_until = NULL, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status IN ('pending', 'waiting')

-- name: cancel_running
-- q.cancel() of a running job: its worker sees the request at its next heartbeat.
UPDATE {table} SET cancel_requested = 1 WHERE id = %(id)s AND status = 'running'

-- name: cancelled
-- The handler stopped on a cancel request: fenced like every write after a claim.
UPDATE {table}
SET status = 'cancelled', lease_until = NULL, last_error = %(error)s, finished_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s AND status = 'running'
  AND (%(marked)s = 1 OR has_children IS NULL)

-- name: get
SELECT * FROM {table} WHERE id = %(id)s

-- name: wait_look
-- q.wait() by polling: the status of every job this queue's waits wait for, one statement
-- per tick however many wait (primary key look-ups; a job not listed is gone).
SELECT id, status FROM {table} WHERE id IN (%(ids)s)

-- name: wait_rows
-- In the same transaction, when wait_look found jobs ended: their rows, for their waits.
SELECT * FROM {table} WHERE id IN (%(ids)s)

-- name: list_jobs
-- Newest first, one page: the caller passes the last id it saw as before_id (keyset
-- pagination). The primary key is read backwards; the filters are checked on the way.
SELECT * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status IN (%(statuses)s))
  AND (%(all_queues)s OR queue = %(queue)s)
ORDER BY id DESC
LIMIT %(limit)s

-- name: stats
-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
        SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
        SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
        SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
        SUM(status = 'done') AS done,
        SUM(status = 'failed') AS failed,
        SUM(status = 'cancelled') AS cancelled,
        SUM(status = 'waiting') AS waiting,
        TIMESTAMPDIFF(MICROSECOND,
            MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
            UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
    FROM {table}
    WHERE %(all_queues)s OR queue IN (%(queues)s)
) AS s
LEFT JOIN {counters_table} AS c ON c.name = 'pruned'

-- name: complete_held
-- One fenced statement for the whole batch: each row must still be running at the attempt
-- and claim token its item names. %(items)s is one bound JSON array of [id, attempt,
-- claim_id, result] (claim_id null for a job claimed before the token existed; result: the
-- stored JSON text as a JSON string, or null), read back as rows by JSON_TABLE; each item
-- finds its row by the primary key, and the attempt with the token is the fence.
UPDATE JSON_TABLE(%(items)s, '$[*]' COLUMNS (
    id BIGINT PATH '$[0]', at INT PATH '$[1]', cid BIGINT PATH '$[2]',
    res LONGTEXT PATH '$[3]')) AS p
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = p.id AND t.attempt = p.at AND t.claim_id <=> p.cid
SET t.status = 'done', t.result = p.res, t.lease_until = NULL,
    t.finished_at = UTC_TIMESTAMP(6)
WHERE t.status = 'running' AND (%(marked)s = 1 OR t.has_children IS NULL)

-- name: complete_which
-- After a batch matched fewer rows than it named: the rows it completed are the ones done
-- at the named attempt with the newest finished_at (one statement, one clock reading).
SELECT id, attempt, claim_id, finished_at, has_children FROM {table}
WHERE id IN (%(ids)s) AND status = 'done'

-- name: enqueue_rows
-- The whole batch as one bound JSON array of [payload_text, idempotency_key] pairs:
-- one placeholder instead of seven per row (the pure-Python driver binds each one in
-- Python). JSON_TABLE exists in MySQL 8.0.4+ and MariaDB 10.6+; rows go in array order.
-- has_children: TRUE for a workflow's jobs that get a child next in the same transaction.
-- key_wait as in enqueue: with a key, every job of the batch but the first waits behind it.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, created_at,
                     order_key, key_limit, key_rate, key_rate_ms, headers, has_children, key_wait)
SELECT %(queue)s, v.payload, %(priority)s, %(max_attempts)s,
       COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
       v.ikey, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s,
       %(has_children)s,
       CASE WHEN %(order_key)s IS NULL THEN NULL
            WHEN v.n > 1 OR EXISTS (
                SELECT 1 FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
                WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
            THEN 1 END
FROM JSON_TABLE(%(rows)s, '$[*]' COLUMNS (
    n FOR ORDINALITY,
    payload LONGTEXT CHARACTER SET utf8mb4 PATH '$[0]',
    ikey CHAR(36) CHARACTER SET utf8mb4 PATH '$[1]'
)) AS v
ORDER BY v.n

-- name: retry_failed
-- failed → pending, now, with max_attempts more attempts than it has used (the fencing
-- token never goes back). A job whose dedupe_key is held by an active job stays failed:
-- the self-join finds it (MySQL refuses a subquery on the table being updated). Not
-- waiting (key_wait): an older job of its key than the key's pending ones, it is the key's
-- head now (the previous head, not flagged, is read by claims until it runs).
UPDATE {table} AS j LEFT JOIN {table} AS a ON a.dedupe_active = j.dedupe_key
SET j.status = 'pending', j.run_at = UTC_TIMESTAMP(6), j.lease_until = NULL,
    j.finished_at = NULL, j.key_wait = NULL,
    j.max_attempts = LEAST(2147483647, j.attempt + COALESCE(%(attempts)s, j.max_attempts))
WHERE j.status = 'failed' AND a.id IS NULL
  AND (%(all_ids)s OR j.id IN (%(ids)s))
  AND (%(all_queues)s OR j.queue IN (%(queues)s))

-- name: prune
-- At most %(limit)s finished jobs per statement, so a large prune holds no long locks.
-- A parent whose child has not finished stays (the child reads its result when claimed):
-- the parents still needed are read into a derived table first (MySQL refuses a subquery
-- on the table a DELETE deletes from).
DELETE FROM {table}
WHERE finished_status IN (%(statuses)s)
  AND finished_at < TIMESTAMPADD(MICROSECOND, -%(older_ms)s * 1000, UTC_TIMESTAMP(6))
  AND id NOT IN (
    SELECT parent FROM (
        SELECT d.parent FROM {deps_table} AS d JOIN {table} AS c ON c.id = d.child
        WHERE c.status IN ('waiting', 'pending', 'running')) AS needed)
LIMIT %(limit)s

-- name: count_pruned
-- In the prune batch's transaction: the table's running total of pruned jobs.
UPDATE {counters_table} SET total = total + %(deleted)s, updated_at = UTC_TIMESTAMP(6)
WHERE name = 'pruned'

-- name: lock_acquire
-- Session-level, server-wide (the name carries the database and table). Waits up to
-- %(wait_s)s seconds; 1 when granted, 0 on timeout.
SELECT GET_LOCK(%(name)s, %(wait_s)s) AS acquired

-- name: lock_check
SELECT COALESCE(IS_USED_LOCK(%(name)s) = CONNECTION_ID(), 0) AS held

-- name: lock_release
SELECT RELEASE_LOCK(%(name)s) AS released

-- name: live_leases
-- Single mode, after taking the lock: running jobs whose lease has not ended, or ended
-- less than %(margin_s)s seconds ago, on the statement's clock. A holder cut off from the
-- database cannot heartbeat, so its leases end while its handlers run; once back, its
-- heartbeats renew them: the margin gives it time to.
SELECT id, attempt, claim_id FROM {table} FORCE INDEX (`{prefix}_ready`)
WHERE claimable = 1 AND key_wait IS NULL AND status = 'running'
  AND lease_until > TIMESTAMPADD(SECOND, -%(margin_s)s, UTC_TIMESTAMP(6))
LIMIT %(limit)s

-- name: session_id
SELECT CONNECTION_ID() AS session

-- name: count_sessions
-- How many of these session ids are still connected (tests and operators count a pool).
SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id IN (%(sessions)s)

-- name: count_sessions_mysql
-- MySQL: information_schema.processlist converts every session's query text to utf8mb3 and
-- fails (3854) while any session runs a query with a 4-byte character; MariaDB has no
-- performance_schema.processlist.
SELECT COUNT(*) AS n FROM performance_schema.processlist WHERE id IN (%(sessions)s)

-- name: kill_session
KILL %(session)s

-- name: clock
SELECT UTC_TIMESTAMP(6) AS now

-- name: tick_claim
-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once: a
-- second insert of the same tick waits for the first's row lock, then inserts nothing
-- (0 rows) if it committed. IGNORE only ever meets a duplicate key here: the schedule
-- name is checked to fit its column before it is bound.
INSERT IGNORE INTO {ticks_table} (schedule, tick) VALUES (%(schedule)s, %(tick)s)

-- name: tick_last
SELECT MAX(tick) AS tick FROM {ticks_table} WHERE schedule = %(schedule)s

-- name: tick_prune
DELETE FROM {ticks_table} WHERE schedule = %(schedule)s AND tick < %(before)s

-- name: schema_session
-- The migrating connection: an ALTER TABLE that waits longer than this for the table's
-- metadata lock gives up (and is tried again) rather than queueing every worker behind it.
SET SESSION lock_wait_timeout = 5

-- name: schema_state
SELECT (SELECT COUNT(*) FROM information_schema.tables
        WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s)
           AS has_jobs,
       (SELECT COUNT(*) FROM information_schema.tables
        WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(version_name)s)
           AS has_version


-- name: schema_catalog
-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, column_name AS name FROM information_schema.columns
 WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s
UNION ALL
SELECT DISTINCT 'index', index_name FROM information_schema.statistics
 WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s

-- name: schema_version
SELECT MAX(version) AS version FROM {version_table}

-- name: schema_create
CREATE TABLE IF NOT EXISTS {version_table} (
    version    INT          NOT NULL,
    name       VARCHAR(255) NOT NULL,
    applied_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin

-- name: schema_record
INSERT INTO {version_table} (version, name) VALUES (%(version)s, %(name)s)
ON DUPLICATE KEY UPDATE version = version

-- name: wake_probe
-- An idle worker's look for new jobs (docs/worker.md): the highest id committed, read from
-- the end of the primary key without reading rows; a change means an enqueue (or a prune).
-- And the count of jobs released by their parents' ends (count_released), one row by its
-- primary key: a release changes no id.
SELECT (SELECT MAX(id) FROM {table}) AS top,
       (SELECT total FROM {counters_table} WHERE name = 'released') AS released

-- name: uninstall
DROP TABLE IF EXISTS {deps_table};
DROP TABLE IF EXISTS {table};
DROP TABLE IF EXISTS {ticks_table};
DROP TABLE IF EXISTS {keys_table};
DROP TABLE IF EXISTS {counters_table};
DROP TABLE IF EXISTS {queues_table};
DROP TABLE IF EXISTS {rates_table};
DROP TABLE IF EXISTS {workers_table};
DROP TABLE IF EXISTS {version_table}

-- ==== pause and rate limits ====

-- name: queue_pause
-- q.pause / q.resume: the queue's flag, its row made the first time. The claim's pick
-- reads it: a pick that starts after this commits takes nothing from a paused queue.
INSERT INTO {queues_table} (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE paused = %(paused)s, updated_at = UTC_TIMESTAMP(6)

-- name: queues_paused
SELECT queue FROM {queues_table} WHERE paused = 1 ORDER BY queue

-- name: rate_window
-- Under the queue's claim lock, in a statement of its own (READ COMMITTED: a fresh read
-- view, so it sees every claim committed before the lock was granted): the jobs claimed
-- from the queue in the last per_ms milliseconds, and how long until the oldest of those
-- claims leaves the window (milliseconds; NULL when there is none); now: this statement's
-- time, from which a claim of jobs with a key rate starts their leases (docs/control.md).
SELECT COALESCE(SUM(n), 0) AS used,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(claimed_at)) / 1000.0 + %(per_ms)s
           AS wait_ms,
       UTC_TIMESTAMP(6) AS now
FROM {rates_table}
WHERE queue = %(queue)s
  AND claimed_at > TIMESTAMPADD(MICROSECOND, %(per_ms)s * -1000, UTC_TIMESTAMP(6))

-- name: rate_record
-- After the claim, in its transaction: this statement starts after the claim's pick, so
-- its time is never earlier than the claim's (docs/control.md: why that keeps the limit).
INSERT INTO {rates_table} (queue, claimed_at, n) VALUES (%(queue)s, UTC_TIMESTAMP(6), %(n)s)

-- name: rate_prune
-- The queue's claims that have left the window are counted by no claim again.
DELETE FROM {rates_table}
WHERE queue = %(queue)s
  AND claimed_at <= TIMESTAMPADD(MICROSECOND, %(per_ms)s * -1000, UTC_TIMESTAMP(6))

-- name: key_admit
-- Rate limits per key (key_rate): the jobs of one key this claim admits, under the key's
-- lock, after rate_window counted the key's window: their leases start at that count's
-- time (bound: rate_window's now plus the lease), so a job's start is never earlier than
-- the count that admitted it and never later than the rate_record that logs it
-- (docs/control.md: why that keeps the limit). Fenced by this claim's token.
UPDATE {table}
SET lease_until = %(lease_until)s, run_at = %(lease_until)s
WHERE id IN (%(ids)s) AND claim_id = %(claim_id)s AND status = 'running'

-- name: key_defer
-- The jobs of one key this claim took but the key's window had no room for: back to
-- pending as they were before the claim (the attempt it added taken back: the claim has
-- not committed, so no holder ever saw that attempt, and the new token stays), due when
-- the window has room. A deferred job stays its key's head: while it is pending, no later
-- job of its key is claimable. Fenced by this claim's token.
UPDATE {table}
SET status = 'pending', attempt = attempt - 1, lease_until = NULL,
    run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))
WHERE id IN (%(ids)s) AND claim_id = %(claim_id)s AND status = 'running'

-- name: rates_forget
-- In a prune's last batch: rate records older than the longest window (a week), which no
-- claim counts again; a claim prunes only its own queue's or key's, so a key never claimed
-- again would keep its records without this.
DELETE FROM {rates_table} WHERE claimed_at < TIMESTAMPADD(DAY, -7, UTC_TIMESTAMP(6))

-- ==== dashboard and workers ====

-- name: worker_register
-- A worker process's row in the live worker list (migration 0011), written as it starts.
INSERT INTO {workers_table} (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
        UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE in_flight = 0, last_seen = UTC_TIMESTAMP(6)

-- name: worker_forget
-- Rows of workers not seen for %(older_s)s seconds (killed long ago): dropped as a worker
-- registers, so the list does not grow without end.
DELETE FROM {workers_table}
WHERE last_seen < TIMESTAMPADD(SECOND, -%(older_s)s, UTC_TIMESTAMP(6))

-- name: worker_beat
-- On the worker's heartbeat: jobs in flight, and when it was last seen (0 rows: its row
-- was forgotten meanwhile, and the worker writes it again). last_seen always changes
-- (microseconds), so the row count is the rows found.
UPDATE {workers_table} SET in_flight = %(in_flight)s, last_seen = UTC_TIMESTAMP(6)
WHERE id = %(id)s

-- name: worker_unregister
DELETE FROM {workers_table} WHERE id = %(id)s

-- name: worker_list
-- seen_ago on the database's clock: a worker is gone once it is several of its beats.
SELECT id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen,
       TIMESTAMPDIFF(MICROSECOND, last_seen, UTC_TIMESTAMP(6)) / 1000000.0 AS seen_ago
FROM {workers_table}
ORDER BY started_at, id

-- name: queue_overview
-- The active jobs of every queue: the active rows are claimable = 1, read from the claim
-- index (claimable, key_wait, ...), never a finished job. FORCE INDEX here and in
-- queue_running and live_leases: MariaDB 10.11 estimated a look-up of a VIRTUAL column's
-- index (this index as 0016 built it) at half the table and read the whole table instead
-- (seen with 500 active jobs among 50,000; MySQL 9.7 took the index).
SELECT queue,
       SUM(status = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS pending,
       SUM(status = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
       SUM(status = 'running' AND lease_until >= UTC_TIMESTAMP(6)) AS running,
       SUM(status = 'running' AND lease_until < UTC_TIMESTAMP(6)) AS expired,
       TIMESTAMPDIFF(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= UTC_TIMESTAMP(6) THEN run_at END),
           UTC_TIMESTAMP(6)) / 1000000.0 AS oldest_pending_age
FROM {table} FORCE INDEX (`{prefix}_ready`)
WHERE claimable = 1
GROUP BY queue

-- name: queue_recent
-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index (finished_status, finished_at); at most cap rows are read (the
-- caller shows "cap or more").
SELECT queue, status, minute, COUNT(*) AS n
FROM (
    SELECT queue, status,
           FLOOR(TIMESTAMPDIFF(SECOND, finished_at, UTC_TIMESTAMP(6)) / 60) AS minute
    FROM {table}
    WHERE finished_status IN ('done', 'failed')
      AND finished_at >= TIMESTAMPADD(SECOND, -%(window_s)s, UTC_TIMESTAMP(6))
    LIMIT %(cap)s
) AS r
GROUP BY queue, status, minute

-- name: ticks_overview
-- The periodic ledger: each schedule's latest tick (the ledger keeps only recent ones).
SELECT schedule, MAX(tick) AS last_tick, COUNT(*) AS ticks
FROM {ticks_table}
GROUP BY schedule
ORDER BY schedule

-- name: list_jobs_task
-- list_jobs of one task (an App task's payload is {"task": name, ...}).
SELECT * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s OR status IN (%(statuses)s))
  AND (%(all_queues)s OR queue = %(queue)s)
  AND JSON_UNQUOTE(JSON_EXTRACT(payload, '$.task')) = %(task)s
ORDER BY id DESC
LIMIT %(limit)s

-- ==== job control: snooze, progress, dedupe windows, debounce ====

-- name: snooze
-- The job back to pending, due in delay_ms, no error recorded. As release: the claim's
-- attempt stays (the fencing token) and max_attempts grows by one, so a snooze uses up no
-- attempt. A job snoozed max_snoozes times already is not matched: the dialect then fails
-- it (fenced, by fail).
UPDATE {table}
SET status = 'pending', run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6)),
    lease_until = NULL, max_attempts = LEAST(2147483647, max_attempts + 1),
    snoozes = COALESCE(snoozes, 0) + 1
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s
  AND status = 'running'
  AND COALESCE(snoozes, 0) < %(max_snoozes)s

-- name: set_progress
UPDATE {table} SET progress = %(progress)s
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id <=> %(claim_id)s
  AND status = 'running'

-- name: find_dedupe_window
-- Under the key's lock (key_lock): the job whose dedupe_for window is still open.
SELECT id FROM {table}
WHERE dedupe_key = %(dedupe_key)s AND dedupe_until > UTC_TIMESTAMP(6)
ORDER BY id DESC LIMIT 1

-- name: find_debounce
-- Under the key's lock: the newest pending job of a debounce key.
SELECT id FROM {table}
WHERE debounce_key = %(debounce_key)s AND debounce_status = 'pending'
ORDER BY id DESC LIMIT 1

-- name: debounce
-- Only while still pending: a claim that took the job first leaves 0 rows (the dialect
-- then enqueues a new job). The claim skips the row while this holds its lock, and then
-- finds it due later.
UPDATE {table}
SET payload = %(payload)s, headers = %(headers)s,
    run_at = TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))
WHERE id = %(id)s AND status = 'pending'

-- name: enqueue_control
-- enqueue_dedupe with the window's end (dedupe_ms > 0) or a debounce key.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, created_at, order_key, key_limit, key_rate, key_rate_ms, dedupe_until, debounce_key,
                     headers, key_wait)
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(%(run_at)s, TIMESTAMPADD(MICROSECOND, %(delay_ms)s * 1000, UTC_TIMESTAMP(6))),
        %(idempotency_key)s, %(dedupe_key)s, UTC_TIMESTAMP(6), %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s,
        CASE WHEN %(dedupe_ms)s > 0
             THEN TIMESTAMPADD(MICROSECOND, %(dedupe_ms)s * 1000, UTC_TIMESTAMP(6)) END,
        %(debounce_key)s, %(headers)s,
        CASE WHEN %(order_key)s IS NOT NULL AND EXISTS (
            SELECT 1 FROM {table} AS e FORCE INDEX (`{prefix}_key_state`)
            WHERE e.order_key = %(order_key)s AND e.key_status = 'pending')
        THEN 1 END)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in {deps_table}. Id lists are bound as one JSON
-- array read by JSON_TABLE (one placeholder, whatever the number of ids). Locks: an
-- enqueue locks its parents FOR UPDATE and marks them has_children, a parent's end
-- (completion, failure, cancel) updates the parent and then, when it has the mark, locks
-- its waiting children FOR UPDATE; so a parent cannot end between an enqueue's read of its
-- status and the commit of the child's edges, and two parents of one child ending together
-- settle it one after the other (a locking read sees the latest committed rows, the
-- parents' statuses are read at READ COMMITTED).

-- name: deps_lock_parents
-- The parents of a new job, each as it is now, locked until the enqueue commits.
SELECT t.id, t.status FROM {table} AS t
WHERE t.id IN (SELECT j.p FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j)
ORDER BY t.id
FOR UPDATE

-- name: deps_mark
-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.has_children = 1
WHERE t.has_children IS NULL

-- name: deps_add
-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO {deps_table} (child, parent, run_on_failure)
SELECT e.c, e.p, %(run)s
FROM JSON_TABLE(%(edges)s, '$[*]' COLUMNS (c BIGINT PATH '$[0]', p BIGINT PATH '$[1]')) AS e

-- name: deps_hold
-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (claimable is NULL).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = IF(%(hold)s = 1, 'waiting', t.status), t.has_parents = 1
WHERE t.status = 'pending'

-- name: deps_children
-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM {table} AS c
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM {deps_table} AS d
    JOIN JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j ON d.parent = j.p)
ORDER BY c.id
FOR UPDATE

-- name: deps_parents
-- Every parent of these children, with its status now (NULL: pruned).
SELECT d.child, d.parent, d.run_on_failure, p.status
FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (c BIGINT PATH '$')) AS j
JOIN {deps_table} AS d ON d.child = j.c
LEFT JOIN {table} AS p ON p.id = d.parent

-- name: deps_release
-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = 'pending', t.run_at = GREATEST(t.run_at, UTC_TIMESTAMP(6))
WHERE t.status = 'waiting'

-- name: count_released
-- The last statement of a transaction that released waiting jobs: the table's count of
-- released jobs grows, which idle workers' probe (wake_probe) reads. Its row stays locked
-- until this transaction's COMMIT, so two releases committing together take turns only
-- for that. The row is made by the first release.
INSERT INTO {counters_table} (name, total, updated_at)
VALUES ('released', %(n)s, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE total = total + %(n)s, updated_at = UTC_TIMESTAMP(6)

-- name: deps_cancel
-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (p BIGINT PATH '$')) AS j
STRAIGHT_JOIN {table} AS t FORCE INDEX (PRIMARY) ON t.id = j.p
SET t.status = 'cancelled', t.last_error = %(error)s, t.finished_at = UTC_TIMESTAMP(6)
WHERE t.status IN ('waiting', 'pending')

-- name: deps_results
-- The parents' results of claimed jobs (job.parent_results).
SELECT d.child, d.parent, p.result
FROM JSON_TABLE(%(id_list)s, '$[*]' COLUMNS (c BIGINT PATH '$')) AS j
JOIN {deps_table} AS d ON d.child = j.c
JOIN {table} AS p ON p.id = d.parent

-- name: deps_prune
-- In a prune batch's transaction, after it deleted jobs: the edges of children that no
-- longer exist (read through the primary key of the jobs table, one look-up per edge).
DELETE FROM {deps_table}
WHERE NOT EXISTS (SELECT 1 FROM {table} AS j WHERE j.id = {deps_table}.child)
