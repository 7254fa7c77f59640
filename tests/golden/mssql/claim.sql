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
FROM [skiplock_jobs] AS c WITH (ROWLOCK, READPAST, UPDLOCK)
WHERE c.queue IN (%(queues)s) AND c.status IN ('pending', 'running')
  AND c.run_at <= SYSUTCDATETIME()
  AND NOT EXISTS (SELECT 1 FROM [skiplock_jobs_queues] AS p
                  WHERE p.queue = c.queue AND p.paused = 1)
  AND (c.order_key IS NULL OR (
        NOT EXISTS (
            SELECT 1 FROM [skiplock_jobs] AS e
            WHERE e.order_key = c.order_key AND e.status = 'pending' AND e.id < c.id)
        AND (SELECT count(*) FROM [skiplock_jobs] AS e
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
FROM [skiplock_jobs] AS j JOIN @picked AS p ON p.id = j.id
WHERE j.status IN ('pending', 'running') AND j.run_at <= SYSUTCDATETIME()
