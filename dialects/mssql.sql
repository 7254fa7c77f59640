-- skiplock statements for SQL Server 2016+ (13.x) and Azure SQL (READPAST).
-- {table} is the checked, bracket-quoted table name; {prefix} its bare name for index names.
-- Times are DATETIME2(6) in UTC from SYSUTCDATETIME(), the database's clock. It is read
-- when the statement runs (one value per statement), not when its transaction began, so a
-- lease set late in a caller's long transaction starts then.
-- run_at is "claimable from": for a pending job its schedule, for a running job the end of
-- its lease, so one filtered index serves both new jobs and jobs whose lease expired.
-- pymssql puts bound values into the text itself, so no statement here may contain a
-- percent sign other than a %(name)s placeholder.
-- DATEADD takes an int: a duration in milliseconds can pass 2^31 (25 days), so the dialect
-- binds each *_ms value as whole seconds (*_s) and the rest (*_rem_ms).
-- status is VARCHAR (ASCII words) so the filtered indexes and the statements compare the
-- same literal type; everything a user writes is NVARCHAR.

-- name: session
-- Run once per new connection. Filtered indexes refuse writes unless these options are
-- set (pymssql sets most by default; a user's conn_properties may not). XACT_ABORT OFF
-- keeps a duplicate key in enqueue_dedupe from dooming the transaction. TEXTSIZE: FreeTDS
-- would otherwise cut NVARCHAR(MAX) payloads it reads.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET NUMERIC_ROUNDABORT OFF;
SET XACT_ABORT OFF;
SET TEXTSIZE 2147483647;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED

-- name: server_version
SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)) AS version,
       CAST(SERVERPROPERTY('EngineEdition') AS INT) AS engine_edition,
       @@VERSION AS banner

-- name: enqueue
-- OUTPUT without INTO is refused on a table with triggers; skiplock's table has none.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
OUTPUT inserted.id
VALUES (%(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
        COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                 DATEADD(MILLISECOND, %(delay_rem_ms)s,
                         DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
        %(idempotency_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s)

-- name: key_lock
-- Before an enqueue with a key: an application lock owned by the enqueuing transaction,
-- so enqueues of one key run one at a time and its ids grow in commit order: a claim that
-- sees a keyed job sees every earlier job of its key. Claims never take this lock.
-- order_key_digest: the dialect's SHA-256 of the key as NVARCHAR(255) (UTF-16LE), in
-- upper-case hex: what CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', ...), 2) gives, which
-- Babelfish does not run (tests/golden/mssql/BABELFISH_GAPS.md).
DECLARE @key_lock int, @key_resource NVARCHAR(255) = CONCAT(N'skiplock key {prefix} ',
    CAST(%(order_key_digest)s AS NVARCHAR(64)));
EXEC @key_lock = sp_getapplock
    @Resource = @key_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = -1, @DbPrincipal = 'public'

-- name: queue_lock
-- A claim of a queue with a limit (queue_limits): the queue's application lock, owned by
-- the claiming transaction, taken without waiting (@LockTimeout = 0): while another claim
-- of that queue holds it, this claim takes nothing from the queue. queue_digest: as
-- order_key_digest in key_lock.
DECLARE @queue_lock int, @queue_resource NVARCHAR(255) = CONCAT(N'skiplock queue {prefix} ',
    CAST(%(queue_digest)s AS NVARCHAR(64)));
EXEC @queue_lock = sp_getapplock
    @Resource = @queue_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = 0, @DbPrincipal = 'public';
SELECT CASE WHEN @queue_lock >= 0 THEN 1 ELSE 0 END AS held

-- name: queue_running
-- Under the queue's lock, in a statement of its own (so it reads every claim committed
-- before the lock was granted): the queue's jobs that hold a live lease.
SELECT count(*) AS n FROM {table}
WHERE queue = %(queue)s AND status = 'running' AND lease_until > SYSUTCDATETIME()

-- name: enqueue_dedupe
-- SQL Server has no ON CONFLICT DO NOTHING. NOT EXISTS finds a committed active job
-- without an error (no row comes back, the caller looks it up with find_dedupe); a
-- concurrent insert of the same key that NOT EXISTS could not see still meets the filtered
-- unique index and raises 2601/2627, which the dialect turns into the same "look it up".
-- With XACT_ABORT OFF (see session) that error ends the statement, not the transaction.
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key,
                     dedupe_key, order_key, key_limit, key_rate, key_rate_ms, headers)
OUTPUT inserted.id
SELECT %(queue)s, %(payload)s, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       %(idempotency_key)s, %(dedupe_key)s, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, %(headers)s
WHERE NOT EXISTS (SELECT 1 FROM {table}
                  WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running'))

-- name: find_dedupe
SELECT id FROM {table}
WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running')

-- name: enqueue_many
-- The dialect repeats enqueue_many_row once per job (placeholders only, never values), at
-- most 500 rows a statement. INSERT ... SELECT ... ORDER BY assigns the identity values in
-- that order, so a batch is claimed in the order it was given.
-- The ids come back from a read of the identity range the INSERT used, in the same batch,
-- not from OUTPUT: Babelfish refuses OUTPUT with ORDER BY (tests/golden/mssql/
-- BABELFISH_GAPS.md). Every id this INSERT takes is at least IDENT_CURRENT before it
-- and at most SCOPE_IDENTITY() after it; the range may also hold other transactions'
-- rows, which the dialect drops by idempotency key. NOLOCK: the read takes no row locks,
-- so it never waits for a row another transaction is writing (two batches whose ids
-- interleave would otherwise wait for each other under locking isolation levels) and it
-- runs under every isolation level a caller's transaction may have (READPAST is refused
-- under SERIALIZABLE and SNAPSHOT); the uncommitted rows of others that it may see are
-- dropped by key. The read is an ordered seek of the clustered primary key: the bounds
-- are BIGINT, as id is (IDENT_CURRENT and SCOPE_IDENTITY give NUMERIC(38, 0)), and a page
-- split only moves rows to a later page of the seek.
DECLARE @enqueue_first BIGINT = IDENT_CURRENT(N'{table}');
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
SELECT %(queue)s, v.payload, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       v.ikey, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, CAST(%(headers)s AS NVARCHAR(MAX))
FROM (VALUES {rows}) AS v (n, payload, ikey)
ORDER BY v.n;
DECLARE @enqueue_last BIGINT = SCOPE_IDENTITY();
SELECT j.id, j.idempotency_key FROM {table} AS j WITH (NOLOCK)
WHERE j.id >= @enqueue_first AND j.id <= @enqueue_last

-- name: enqueue_many_row
(%(n)s, CAST(%(payload)s AS NVARCHAR(MAX)), CAST(%(idempotency_key)s AS UNIQUEIDENTIFIER))

-- name: claim
-- One batch, two statements, one transaction (skiplock's own connection always has one
-- open; on a caller's connection in autocommit the operation begins one). READ COMMITTED
-- first: READPAST is refused under SERIALIZABLE and REPEATABLE READ, and a pooled
-- connection can carry whatever level its last user set.
-- The pick: READPAST skips rows another claim holds; UPDLOCK holds the picked rows until
-- COMMIT (not until the end of the statement) and makes the read a locking read even
-- under READ_COMMITTED_SNAPSHOT; ROWLOCK keeps the locks on rows so READPAST skips rows,
-- not pages. So between the pick and the UPDATE no other transaction can write a picked
-- row, and the UPDATE of the ids in @picked changes exactly what an UPDATE of the pick
-- itself would (an UPDATE of a CTE, which Babelfish does not run); it still checks the
-- pick's own conditions on the row, so a batch run outside a transaction cannot take a
-- job another claim took in between.
-- A picked row that is 'running' has an expired lease: it is claimed again as
-- attempt + 1, or, when its attempts are spent, ends 'failed'. A keyed job is claimable
-- only while no earlier job of its key is pending and fewer than its key_limit (NULL: 1)
-- other jobs of its key run (docs/sql.md); the subqueries read without READPAST, so under
-- locking READ COMMITTED the pick may wait for a transaction writing a job of the same key
-- (READ_COMMITTED_SNAPSHOT reads the last committed row instead).
-- OUTPUT returns both kinds; the dialect keeps the 'running' ones (OUTPUT
-- cannot be filtered without INTO a table variable that repeats every column).
-- waited_us: microseconds from when the row was due (its run_at before this UPDATE) to the
-- statement's clock, for the worker's wait metric.
-- Every right-hand side of SET reads the row as it was before this UPDATE. One batch
-- serves one queue or several: queues expand to IN (N'a', ...), and IN with one value is
-- an equality to the optimizer (PostgreSQL needs claim_queues for its array instead).
-- A paused queue's rows are left (q.pause): its flag is read at READ COMMITTED, waiting
-- for a pause or resume that has not committed yet (docs/control.md).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
DECLARE @picked TABLE (id BIGINT PRIMARY KEY);
INSERT INTO @picked (id)
SELECT TOP (%(limit)s) c.id
FROM {table} AS c WITH (ROWLOCK, READPAST, UPDLOCK)
WHERE c.queue IN (%(queues)s) AND c.status IN ('pending', 'running')
  AND c.run_at <= SYSUTCDATETIME()
  AND NOT EXISTS (SELECT 1 FROM {queues_table} AS p
                  WHERE p.queue = c.queue AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        NOT EXISTS (
            SELECT 1 FROM {table} AS e
            WHERE e.order_key = c.order_key AND e.status = 'pending' AND e.id < c.id)
        AND (SELECT count(*) FROM {table} AS e
             WHERE e.order_key = c.order_key AND e.status = 'running' AND e.id <> c.id)
            < COALESCE(c.key_limit, 1)))
ORDER BY c.priority, c.run_at, c.id;
UPDATE j SET
    status = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                  THEN 'failed' ELSE 'running' END,
    attempt = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                   THEN j.attempt ELSE j.attempt + 1 END,
    lease_until = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                       THEN NULL
                       ELSE DATEADD(MILLISECOND, %(lease_rem_ms)s,
                                    DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())) END,
    run_at = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                  THEN j.run_at
                  ELSE DATEADD(MILLISECOND, %(lease_rem_ms)s,
                               DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())) END,
    last_error = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                      THEN CONCAT(N'lease expired: attempt ', j.attempt, N' of ', j.max_attempts,
                                  N' did not finish before its lease ended (worker died or stalled)')
                      ELSE j.last_error END,
    finished_at = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                       THEN SYSUTCDATETIME() ELSE NULL END,
    claim_id = CASE WHEN j.status = 'running' AND j.attempt >= j.max_attempts
                    THEN j.claim_id ELSE CAST(%(claim_id)s AS BIGINT) END
OUTPUT inserted.*, DATEDIFF_BIG(MICROSECOND, deleted.run_at, SYSUTCDATETIME()) AS waited_us
FROM {table} AS j JOIN @picked AS p ON p.id = j.id
WHERE j.status IN ('pending', 'running') AND j.run_at <= SYSUTCDATETIME()

-- name: heartbeat
UPDATE {table}
SET lease_until = DATEADD(MILLISECOND, %(lease_rem_ms)s,
                          DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())),
    run_at = DATEADD(MILLISECOND, %(lease_rem_ms)s,
                     DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME()))
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: lease_of
-- The heartbeat's answer: the new lease, and whether q.cancel() asked the job to stop.
SELECT lease_until, cancel_requested FROM {table} WHERE id = %(id)s

-- name: complete
-- OUTPUT has_children (workflows; also fail, cancelled, complete_many and the claim's
-- lease ends): the row as written, after any enqueue holding its lock committed, so a
-- child's mark is never missed; only a job with the mark looks for waiting children.
UPDATE {table}
SET status = 'done', result = %(result)s, lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.has_children
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: complete_many
-- The dialect repeats complete_many_row once per job, at most 500 rows a batch. Each
-- row is still checked against its own attempt and claim token (0 never is one: NULL, a job
-- claimed before the token existed, matches only NULL). The rows go through a table
-- variable keyed by (id, attempt), and the result is read by that key in SET: Babelfish
-- runs neither a JOIN (VALUES ...) here nor an OUTPUT with a SET that names a joined
-- table's column. The same one UPDATE, in the same round trip.
DECLARE @done TABLE (id BIGINT NOT NULL, attempt INT NOT NULL, claim_id BIGINT NULL,
                     result NVARCHAR(MAX) NULL, PRIMARY KEY (id, attempt));
INSERT INTO @done (id, attempt, claim_id, result) VALUES
{rows};
UPDATE j
SET status = 'done',
    result = (SELECT d.result FROM @done AS d WHERE d.id = j.id AND d.attempt = j.attempt),
    lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.has_children
FROM {table} AS j
JOIN @done AS v
  ON j.id = v.id AND j.attempt = v.attempt AND ISNULL(j.claim_id, 0) = ISNULL(v.claim_id, 0)
WHERE j.status = 'running'

-- name: complete_many_row
(CAST(%(id)s AS BIGINT), CAST(%(attempt)s AS INT), CAST(%(claim_id)s AS BIGINT),
 CAST(%(result)s AS NVARCHAR(MAX)))

-- name: retry
UPDATE {table}
SET status = 'pending',
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME())),
    lease_until = NULL, last_error = %(error)s
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: fail
UPDATE {table}
SET status = 'failed', lease_until = NULL, last_error = %(error)s,
    finished_at = SYSUTCDATETIME()
OUTPUT inserted.has_children
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: release
-- The job back to pending now. The claim's attempt stays (the fencing token never goes
-- back) and max_attempts grows by one, so a released claim is not counted as one of the
-- job's attempts, by a failure or by a lease that ends.
UPDATE {table}
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: unclaim
-- A claim whose COMMIT lost its connection may or may not have committed: each job it
-- returned is given back as release does, if the claim did commit. Then the row is still
-- running at that attempt with the lease's end the claim wrote (no worker holds it, so
-- nobody heartbeats it). Had the claim rolled back, another claim could take the row at
-- the same attempt, but not with the same lease's end, so the fence holds.
UPDATE {table}
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
  AND lease_until = CAST(%(lease_until)s AS DATETIME2(6))

-- name: cancel_pending
-- q.cancel() of a job not yet claimed (pending, scheduled or waiting for its parents):
-- it is never claimed.
UPDATE {table}
SET status = 'cancelled', cancel_requested = 1, lease_until = NULL, finished_at = SYSUTCDATETIME()
WHERE id = %(id)s AND status IN ('pending', 'waiting')

-- name: cancel_running
-- q.cancel() of a running job: its worker sees the request at its next heartbeat.
UPDATE {table} SET cancel_requested = 1 WHERE id = %(id)s AND status = 'running'

-- name: cancelled
-- The handler stopped on a cancel request: fenced like every write after a claim.
UPDATE {table}
SET status = 'cancelled', lease_until = NULL, last_error = %(error)s, finished_at = SYSUTCDATETIME()
OUTPUT inserted.has_children
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

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
SELECT TOP (%(limit)s) * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s = 1 OR status IN (%(statuses)s))
  AND (%(all_queues)s = 1 OR queue = %(queue)s)
ORDER BY id DESC

-- name: stats
-- The job counts of the chosen queues, and the table's running total of pruned jobs
-- (all its queues: a batch of retention deletes from every queue at once).
SELECT s.*, c.total AS pruned, c.updated_at AS last_pruned_at
FROM (
    SELECT
        SUM(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS pending,
        SUM(CASE WHEN status = 'pending' AND run_at > SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS scheduled,
        SUM(CASE WHEN status = 'running' AND lease_until >= SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS running,
        SUM(CASE WHEN status = 'running' AND lease_until < SYSUTCDATETIME() THEN 1 ELSE 0 END)
            AS expired,
        SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done,
        SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
        SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled,
        SUM(CASE WHEN status = 'waiting' THEN 1 ELSE 0 END) AS waiting,
        DATEDIFF_BIG(MICROSECOND,
            MIN(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN run_at END),
            SYSUTCDATETIME()) / 1000000.0 AS oldest_pending_age
    FROM {table}
    WHERE %(all_queues)s = 1 OR queue IN (%(queues)s)
) AS s
LEFT JOIN {counters_table} AS c ON c.name = N'pruned'

-- name: lock_acquire
-- A Session-owned application lock: held until lock_release or until the connection ends,
-- whatever the transactions do. sp_getapplock returns 0 or 1 when granted, < 0 otherwise.
DECLARE @result int;
EXEC @result = sp_getapplock @Resource = %(name)s, @LockMode = 'Exclusive',
     @LockOwner = 'Session', @LockTimeout = %(wait_ms)s, @DbPrincipal = 'public';
SELECT CASE WHEN @result >= 0 THEN 1 ELSE 0 END AS acquired

-- name: lock_check
SELECT CASE WHEN APPLOCK_MODE('public', %(name)s, 'Session') = 'Exclusive' THEN 1 ELSE 0 END AS held

-- name: lock_release
EXEC sp_releaseapplock @Resource = %(name)s, @LockOwner = 'Session', @DbPrincipal = 'public'

-- name: live_leases
-- Single mode, after taking the lock: running jobs whose lease has not ended, or ended
-- less than %(margin_s)s seconds ago, on the statement's clock. A holder cut off from the
-- database cannot heartbeat, so its leases end while its handlers run; once back, its
-- heartbeats renew them: the margin gives it time to.
SELECT TOP (%(limit)s) id, attempt, claim_id FROM {table}
WHERE status = 'running'
  AND lease_until > DATEADD(SECOND, -%(margin_s)s, SYSUTCDATETIME())

-- name: session_id
SELECT @@SPID AS session

-- name: count_sessions
-- How many of these session ids are still connected (tests and operators count a pool).
SELECT COUNT(*) AS n FROM sys.dm_exec_sessions WHERE session_id IN (%(sessions)s)

-- name: kill_session
-- KILL takes no variable: build it from the integer (never from text).
DECLARE @kill nvarchar(40) = N'KILL ' + CAST(CAST(%(session)s AS int) AS nvarchar(12));
EXEC (@kill)

-- name: retry_failed
UPDATE j
SET status = 'pending', run_at = SYSUTCDATETIME(), lease_until = NULL, finished_at = NULL,
    max_attempts = CASE
        WHEN CAST(j.attempt AS bigint) + COALESCE(%(attempts)s, j.max_attempts) > 2147483647
        THEN 2147483647 ELSE j.attempt + COALESCE(%(attempts)s, j.max_attempts) END
FROM {table} AS j
WHERE j.status = 'failed'
  AND (%(all_ids)s = 1 OR j.id IN (%(ids)s))
  AND (%(all_queues)s = 1 OR j.queue IN (%(queues)s))
  AND (j.dedupe_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM {table} AS a
        WHERE a.dedupe_key = j.dedupe_key AND a.status IN ('pending', 'running')))

-- name: prune
-- DATEADD takes an int: subtract whole seconds, then the milliseconds left (no literal
-- percent sign: the drivers format parameters with it).
-- A parent whose child has not finished stays (the child reads its result when claimed).
DELETE TOP (%(limit)s) FROM {table}
WHERE status IN (%(statuses)s)
  AND finished_at < DATEADD(millisecond, (%(older_ms)s / 1000) * 1000 - %(older_ms)s,
                    DATEADD(second, -(%(older_ms)s / 1000), SYSUTCDATETIME()))
  AND id NOT IN (
    SELECT d.parent FROM {deps_table} AS d JOIN {table} AS c ON c.id = d.child
    WHERE c.status IN ('waiting', 'pending', 'running'))

-- name: count_pruned
-- In the prune batch's transaction: the table's running total of pruned jobs.
UPDATE {counters_table} SET total = total + %(deleted)s, updated_at = SYSUTCDATETIME()
WHERE name = N'pruned'

-- name: clock
SELECT SYSUTCDATETIME() AS now

-- name: tick_claim
-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once.
-- UPDLOCK, HOLDLOCK hold the key range from the check to the insert, so a second insert
-- of the same tick waits, then finds the row and inserts nothing (0 rows).
INSERT INTO {ticks_table} (schedule, tick)
SELECT %(schedule)s, CAST(%(tick)s AS DATETIME2(6))
WHERE NOT EXISTS (
    SELECT 1 FROM {ticks_table} WITH (UPDLOCK, HOLDLOCK)
    WHERE schedule = %(schedule)s AND tick = CAST(%(tick)s AS DATETIME2(6)))

-- name: tick_last
SELECT MAX(tick) AS tick FROM {ticks_table} WHERE schedule = %(schedule)s

-- name: tick_prune
DELETE FROM {ticks_table}
WHERE schedule = %(schedule)s AND tick < CAST(%(before)s AS DATETIME2(6))

-- name: schema_session
-- The migrating connection: an ALTER TABLE that waits longer than this (milliseconds) for
-- its schema lock gives up (and is tried again) rather than queueing every worker behind it.
SET LOCK_TIMEOUT 5000

-- name: schema_state
-- jobs_name: the name the table was found under. Under a case-insensitive collation (the
-- default) OBJECT_ID finds [Jobs] for [jobs]: skiplock refuses a name found so. Read from
-- INFORMATION_SCHEMA, which keeps the name as created on Babelfish too (its sys.objects
-- and OBJECT_NAME give it in lower case).
SELECT CASE WHEN OBJECT_ID(N'{table}', N'U') IS NULL THEN 0 ELSE 1 END AS has_jobs,
       CASE WHEN OBJECT_ID(N'{version_table}', N'U') IS NULL THEN 0 ELSE 1 END AS has_version,
       (SELECT TOP (1) TABLE_NAME FROM INFORMATION_SCHEMA.TABLES
        WHERE TABLE_NAME = %(name)s AND TABLE_SCHEMA = COALESCE(%(schema)s, SCHEMA_NAME()))
           AS jobs_name


-- name: schema_catalog
-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, name FROM sys.columns WHERE object_id = OBJECT_ID(N'{table}')
UNION ALL
SELECT 'index', name FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name IS NOT NULL

-- name: schema_version
SELECT MAX(version) AS version FROM {version_table}

-- name: schema_create
IF OBJECT_ID(N'{version_table}', N'U') IS NULL
CREATE TABLE {version_table} (
    version    INT           NOT NULL PRIMARY KEY,
    name       NVARCHAR(255) NOT NULL,
    applied_at DATETIME2(6)  NOT NULL DEFAULT SYSUTCDATETIME()
)

-- name: schema_record
IF NOT EXISTS (SELECT 1 FROM {version_table} WHERE version = %(version)s)
INSERT INTO {version_table} (version, name) VALUES (%(version)s, %(name)s)

-- name: wake_probe
-- An idle worker's look for new jobs (docs/worker.md): the highest id committed, read from
-- the end of the primary key without reading rows; a change means an enqueue (or a prune).
-- READPAST: an uncommitted insert's locked row is stepped over, not waited for.
-- And the count of jobs released by their parents' ends (count_released), one row by its
-- primary key: a release changes no id (while a release holds the row, NULL: one needless
-- look, then the new count).
SELECT (SELECT MAX(id) FROM {table} WITH (READPAST)) AS [top],
       (SELECT total FROM {counters_table} WITH (READPAST) WHERE name = N'released')
           AS released

-- name: uninstall
DROP TABLE IF EXISTS {deps_table};
DROP TABLE IF EXISTS {table};
DROP TABLE IF EXISTS {ticks_table};
DROP TABLE IF EXISTS {counters_table};
DROP TABLE IF EXISTS {queues_table};
DROP TABLE IF EXISTS {rates_table};
DROP TABLE IF EXISTS {workers_table};
DROP TABLE IF EXISTS {version_table}

-- ==== pause and rate limits ====

-- name: queue_pause
-- q.pause / q.resume: the queue's flag, its row made the first time. UPDLOCK and
-- SERIALIZABLE hold the key (or the gap where it goes) until the end of the transaction,
-- so two first pauses of a queue cannot both insert. The claim reads the flag: a claim that
-- starts after this commits takes nothing from a paused queue.
UPDATE {queues_table} WITH (UPDLOCK, SERIALIZABLE)
SET paused = %(paused)s, updated_at = SYSUTCDATETIME()
WHERE queue = %(queue)s;
IF @@ROWCOUNT = 0
INSERT INTO {queues_table} (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, SYSUTCDATETIME())

-- name: queues_paused
SELECT queue FROM {queues_table} WHERE paused = 1 ORDER BY queue

-- name: rate_window
-- Under the queue's claim lock, in a statement of its own (so it reads every claim
-- committed before the lock was granted): the jobs claimed from the queue in the last
-- per_ms milliseconds (at most a week: DATEADD takes an int), and how long until the
-- oldest of those claims leaves the window (milliseconds; NULL when there is none); now:
-- this statement's time, from which a claim of jobs with a key rate starts their leases
-- (docs/control.md).
SELECT COALESCE(SUM(n), 0) AS used,
       DATEDIFF_BIG(MICROSECOND, SYSUTCDATETIME(), MIN(claimed_at)) / 1000.0 + %(per_ms)s
           AS wait_ms,
       SYSUTCDATETIME() AS now
FROM {rates_table}
WHERE queue = %(queue)s AND claimed_at > DATEADD(MILLISECOND, -%(per_ms)s, SYSUTCDATETIME())

-- name: rate_record
-- After the claim, in its transaction: this statement starts after the claim's, so its
-- time is never earlier than the claim's (docs/control.md: why that keeps the limit).
INSERT INTO {rates_table} (queue, claimed_at, n) VALUES (%(queue)s, SYSUTCDATETIME(), %(n)s)

-- name: rate_prune
-- The queue's claims that have left the window are counted by no claim again.
DELETE FROM {rates_table}
WHERE queue = %(queue)s AND claimed_at <= DATEADD(MILLISECOND, -%(per_ms)s, SYSUTCDATETIME())

-- name: key_admit
-- Rate limits per key (key_rate): the jobs of one key this claim admits, under the key's
-- lock, after rate_window counted the key's window: their leases start at that count's
-- time (bound: rate_window's now plus the lease), so a job's start is never earlier than
-- the count that admitted it and never later than the rate_record that logs it
-- (docs/control.md: why that keeps the limit). Fenced by this claim's token.
UPDATE {table}
SET lease_until = CAST(%(lease_until)s AS DATETIME2(6)),
    run_at = CAST(%(lease_until)s AS DATETIME2(6))
WHERE id IN (%(ids)s) AND claim_id = CAST(%(claim_id)s AS BIGINT) AND status = 'running'

-- name: key_defer
-- The jobs of one key this claim took but the key's window had no room for: back to
-- pending as they were before the claim (the attempt it added taken back: the claim has
-- not committed, so no holder ever saw that attempt, and the new token stays), due when
-- the window has room. A deferred job stays its key's head: while it is pending, no later
-- job of its key is claimable. Fenced by this claim's token.
UPDATE {table}
SET status = 'pending', attempt = attempt - 1, lease_until = NULL,
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))
WHERE id IN (%(ids)s) AND claim_id = CAST(%(claim_id)s AS BIGINT) AND status = 'running'

-- name: rates_forget
-- In a prune's last batch: rate records older than the longest window (a week), which no
-- claim counts again; a claim prunes only its own queue's or key's, so a key never claimed
-- again would keep its records without this.
DELETE FROM {rates_table} WHERE claimed_at < DATEADD(DAY, -7, SYSUTCDATETIME())

-- ==== dashboard and workers ====

-- name: worker_register
-- A worker process's row in the live worker list (migration 0011), written as it starts
-- (its id is new; written again only if the row was forgotten). UPDLOCK, HOLDLOCK hold
-- the key from the check to the insert.
INSERT INTO {workers_table}
    (id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen)
SELECT %(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, 0, %(beat_ms)s,
       SYSUTCDATETIME(), SYSUTCDATETIME()
WHERE NOT EXISTS (SELECT 1 FROM {workers_table} WITH (UPDLOCK, HOLDLOCK) WHERE id = %(id)s)

-- name: worker_forget
-- Rows of workers not seen for older_s seconds (killed long ago): dropped as a worker
-- registers, so the list does not grow without end.
DELETE FROM {workers_table}
WHERE last_seen < DATEADD(SECOND, -%(older_s)s, SYSUTCDATETIME())

-- name: worker_beat
-- On the worker's heartbeat: jobs in flight, and when it was last seen (0 rows: its row
-- was forgotten meanwhile, and the worker writes it again).
UPDATE {workers_table} SET in_flight = %(in_flight)s, last_seen = SYSUTCDATETIME()
WHERE id = %(id)s

-- name: worker_unregister
DELETE FROM {workers_table} WHERE id = %(id)s

-- name: worker_list
-- seen_ago on the database's clock: a worker is gone once it is several of its beats.
SELECT id, host, pid, queues, concurrency, in_flight, beat_ms, started_at, last_seen,
       DATEDIFF_BIG(MICROSECOND, last_seen, SYSUTCDATETIME()) / 1000000.0 AS seen_ago
FROM {workers_table}
ORDER BY started_at, id

-- name: queue_overview
-- The active jobs of every queue, from the claim index (filtered on the pending and
-- running rows: it holds the backlog, never the finished jobs).
SELECT queue,
       SUM(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS pending,
       SUM(CASE WHEN status = 'pending' AND run_at > SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS scheduled,
       SUM(CASE WHEN status = 'running' AND lease_until >= SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS running,
       SUM(CASE WHEN status = 'running' AND lease_until < SYSUTCDATETIME() THEN 1 ELSE 0 END)
           AS expired,
       DATEDIFF_BIG(MICROSECOND,
           MIN(CASE WHEN status = 'pending' AND run_at <= SYSUTCDATETIME() THEN run_at END),
           SYSUTCDATETIME()) / 1000000.0 AS oldest_pending_age
FROM {table}
WHERE status IN ('pending', 'running')
GROUP BY queue

-- name: queue_recent
-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index; at most cap rows are read (the caller shows "cap or more").
SELECT queue, status, minute, COUNT(*) AS n
FROM (
    SELECT TOP (%(cap)s) queue, status,
           DATEDIFF(SECOND, finished_at, SYSUTCDATETIME()) / 60 AS minute
    FROM {table}
    WHERE status IN ('done', 'failed')
      AND finished_at >= DATEADD(SECOND, -%(window_s)s, SYSUTCDATETIME())
) AS r
GROUP BY queue, status, minute

-- name: ticks_overview
-- The periodic ledger: each schedule's latest tick (the ledger keeps only recent ones).
SELECT schedule, MAX(tick) AS last_tick, COUNT(*) AS ticks
FROM {ticks_table}
GROUP BY schedule
ORDER BY schedule

-- name: list_jobs_task
-- list_jobs of one task (an App task's payload is {"task": name, ...}). Before SQL Server
-- 2022 a top-level JSON scalar (a payload that is a plain string) is not JSON to
-- JSON_VALUE, which raises on it: the CASE reads only what ISJSON accepts.
SELECT TOP (%(limit)s) * FROM {table}
WHERE id < %(before_id)s
  AND (%(all_statuses)s = 1 OR status IN (%(statuses)s))
  AND (%(all_queues)s = 1 OR queue = %(queue)s)
  AND CASE WHEN ISJSON(payload) = 1 THEN JSON_VALUE(payload, '$.task') END = %(task)s
ORDER BY id DESC

-- ==== job control: snooze, progress, dedupe windows, debounce ====

-- name: snooze
-- The job back to pending, due in delay_ms, no error recorded. As release: the claim's
-- attempt stays (the fencing token) and max_attempts grows by one, so a snooze uses up no
-- attempt. A job snoozed max_snoozes times already is not matched: the dialect then fails
-- it (fenced, by fail).
UPDATE {table}
SET status = 'pending',
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME())),
    lease_until = NULL,
    max_attempts = CASE WHEN max_attempts < 2147483647 THEN max_attempts + 1 ELSE max_attempts END,
    snoozes = COALESCE(snoozes, 0) + 1
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
  AND COALESCE(snoozes, 0) < %(max_snoozes)s

-- name: set_progress
UPDATE {table} SET progress = %(progress)s
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'

-- name: find_dedupe_window
-- Under the key's lock (key_lock): the job whose dedupe_for window is still open.
SELECT TOP (1) id FROM {table}
WHERE dedupe_key = %(dedupe_key)s AND dedupe_until > SYSUTCDATETIME()
ORDER BY id DESC

-- name: find_debounce
-- Under the key's lock: the newest pending job of a debounce key.
SELECT TOP (1) id FROM {table}
WHERE debounce_key = %(debounce_key)s AND status = 'pending'
ORDER BY id DESC

-- name: debounce
-- Only while still pending: a claim that took the job first leaves 0 rows (the dialect
-- then enqueues a new job). The claim skips the row (READPAST) while this holds its lock,
-- and then finds it due later.
UPDATE {table}
SET payload = %(payload)s, headers = %(headers)s,
    run_at = DATEADD(MILLISECOND, %(delay_rem_ms)s, DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))
WHERE id = %(id)s AND status = 'pending'

-- name: enqueue_control
-- enqueue_dedupe with the window's end (dedupe_ms > 0) or a debounce key; a duplicate
-- active dedupe_key is handled as there (no row, or 2601/2627).
INSERT INTO {table} (queue, payload, priority, max_attempts, run_at, idempotency_key,
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
WHERE NOT EXISTS (SELECT 1 FROM {table}
                  WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running'))

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in {deps_table}. Id lists are bound as one JSON
-- array read by OPENJSON (2,100 parameters would not hold a 10,000-job group's ids).
-- Locks: an enqueue holds its parents' update locks (UPDLOCK, HOLDLOCK) until it commits
-- and marks them has_children, a parent's end (completion, failure, cancel) updates the
-- parent and then, when it has the mark, locks its waiting children (UPDLOCK); so a
-- parent cannot end between an enqueue's read of its status and the commit of the child's
-- edges, and two parents of one child ending together settle it one after the other.

-- name: deps_lock_parents
-- The parents of a new job, each as it is now, locked until the enqueue commits.
SELECT t.id, t.status FROM {table} AS t WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE t.id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
ORDER BY t.id

-- name: deps_mark
-- The locked parents get has_children, so that their end looks for waiting children (a
-- parent that ended already is marked too: harmless). A row marked before is not written.
-- Also a workflow's jobs just written by this transaction (no lock: no other sees them).
UPDATE {table} SET has_children = 1
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
  AND has_children IS NULL

-- name: deps_add
-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO {deps_table} (child, parent, run_on_failure)
SELECT e.c, e.p, %(run)s
FROM OPENJSON(%(edges)s) WITH (c BIGINT '$[0]', p BIGINT '$[1]') AS e

-- name: deps_hold
-- New jobs with parents: has_parents (their claim reads the parents' results); when
-- hold (their parents have not all ended), waiting, never claimed (not in the claim
-- index).
UPDATE {table}
SET status = CASE WHEN %(hold)s = 1 THEN 'waiting' ELSE status END, has_parents = 1
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')) AND status = 'pending'

-- name: deps_children
-- After parents ended, in that transaction: their waiting children, locked.
SELECT c.id FROM {table} AS c WITH (UPDLOCK, ROWLOCK)
WHERE c.status = 'waiting' AND c.id IN (
    SELECT d.child FROM {deps_table} AS d
    WHERE d.parent IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')))
ORDER BY c.id

-- name: deps_parents
-- Every parent of these children, with its status now (NULL: pruned).
SELECT d.child, d.parent, d.run_on_failure, p.status
FROM {deps_table} AS d LEFT JOIN {table} AS p ON p.id = d.parent
WHERE d.child IN (SELECT c FROM OPENJSON(%(id_list)s) WITH (c BIGINT '$'))

-- name: deps_release
-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE {table}
SET status = 'pending',
    run_at = CASE WHEN run_at > SYSUTCDATETIME() THEN run_at ELSE SYSUTCDATETIME() END
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')) AND status = 'waiting'

-- name: count_released
-- The last statement of a transaction that released waiting jobs: the table's count of
-- released jobs grows, which idle workers' probe (wake_probe) reads. Its row stays locked
-- until this transaction's COMMIT; the first release inserts it (UPDLOCK, HOLDLOCK: of two
-- first releases, the second waits for the first and then updates its row).
UPDATE {counters_table} WITH (UPDLOCK, HOLDLOCK)
SET total = total + %(n)s, updated_at = SYSUTCDATETIME()
WHERE name = N'released';
IF @@ROWCOUNT = 0
INSERT INTO {counters_table} (name, total, updated_at)
VALUES (N'released', %(n)s, SYSUTCDATETIME())

-- name: deps_cancel
-- Children of a parent that failed or was cancelled: cancelled, naming it.
UPDATE {table}
SET status = 'cancelled', last_error = %(error)s, finished_at = SYSUTCDATETIME()
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$'))
  AND status IN ('waiting', 'pending')

-- name: deps_results
-- The parents' results of claimed jobs (job.parent_results).
SELECT d.child, d.parent, p.result
FROM {deps_table} AS d JOIN {table} AS p ON p.id = d.parent
WHERE d.child IN (SELECT c FROM OPENJSON(%(id_list)s) WITH (c BIGINT '$'))

-- name: deps_prune
-- In a prune batch's transaction, after it deleted jobs: the edges of children that no
-- longer exist (read through the primary key of the jobs table, one look-up per edge).
DELETE FROM {deps_table}
WHERE NOT EXISTS (SELECT 1 FROM {table} AS j WHERE j.id = {deps_table}.child)
