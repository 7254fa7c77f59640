-- One batch, one statement. READ COMMITTED first: READPAST is refused under SERIALIZABLE
-- and REPEATABLE READ, and a pooled connection can carry whatever level its last user set.
-- READPAST skips rows another claim holds; UPDLOCK holds the picked rows until COMMIT and
-- makes the read a locking read even under READ_COMMITTED_SNAPSHOT; ROWLOCK keeps the
-- locks on rows so READPAST skips rows, not pages. A picked row that is 'running' has an
-- expired lease: it is claimed again as attempt + 1, or, when its attempts are spent,
-- ends 'failed'. A keyed job is claimable only while no earlier job of its key is pending
-- and fewer than its key_limit (NULL: 1) other jobs of its key run (docs/sql.md); the
-- subqueries read without
-- READPAST, so under locking READ COMMITTED it may wait for a transaction writing a job
-- of the same key (READ_COMMITTED_SNAPSHOT reads the last committed row instead).
-- OUTPUT returns both kinds; the dialect keeps the 'running' ones (OUTPUT
-- cannot be filtered without INTO a table variable that repeats every column).
-- waited_us: microseconds from when the row was due (its run_at before this UPDATE) to the
-- statement's clock, for the worker's wait metric.
-- Every right-hand side of SET reads the row as it was before this UPDATE. One statement
-- serves one queue or several: queues expand to IN (N'a', ...), and IN with one value is
-- an equality to the optimizer (PostgreSQL needs claim_queues for its array instead).
-- A paused queue's rows are left (q.pause): its flag is read at READ COMMITTED, waiting
-- for a pause or resume that has not committed yet (docs/control.md).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
WITH picked AS (
    SELECT TOP (%(limit)s) *
    FROM [skiplock_jobs] AS c WITH (ROWLOCK, READPAST, UPDLOCK)
    WHERE queue IN (%(queues)s) AND status IN ('pending', 'running')
      AND run_at <= SYSUTCDATETIME()
      AND NOT EXISTS (SELECT 1 FROM [skiplock_jobs_queues] AS p
                      WHERE p.queue = c.queue AND p.paused = 1)
      AND (c.order_key IS NULL OR (
            NOT EXISTS (
                SELECT 1 FROM [skiplock_jobs] AS e
                WHERE e.order_key = c.order_key AND e.status = 'pending' AND e.id < c.id)
            AND (SELECT count(*) FROM [skiplock_jobs] AS e
                 WHERE e.order_key = c.order_key AND e.status = 'running' AND e.id <> c.id)
                < COALESCE(c.key_limit, 1)))
    ORDER BY priority, run_at, id
)
UPDATE picked SET
    status = CASE WHEN status = 'running' AND attempt >= max_attempts
                  THEN 'failed' ELSE 'running' END,
    attempt = CASE WHEN status = 'running' AND attempt >= max_attempts
                   THEN attempt ELSE attempt + 1 END,
    lease_until = CASE WHEN status = 'running' AND attempt >= max_attempts
                       THEN NULL
                       ELSE DATEADD(MILLISECOND, %(lease_rem_ms)s,
                                    DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())) END,
    run_at = CASE WHEN status = 'running' AND attempt >= max_attempts
                  THEN run_at
                  ELSE DATEADD(MILLISECOND, %(lease_rem_ms)s,
                               DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())) END,
    last_error = CASE WHEN status = 'running' AND attempt >= max_attempts
                      THEN CONCAT(N'lease expired: attempt ', attempt, N' of ', max_attempts,
                                  N' did not finish before its lease ended (worker died or stalled)')
                      ELSE last_error END,
    finished_at = CASE WHEN status = 'running' AND attempt >= max_attempts
                       THEN SYSUTCDATETIME() ELSE NULL END,
    claim_id = CASE WHEN status = 'running' AND attempt >= max_attempts
                    THEN claim_id ELSE CAST(%(claim_id)s AS BIGINT) END
OUTPUT inserted.*, DATEDIFF_BIG(MICROSECOND, deleted.run_at, SYSUTCDATETIME()) AS waited_us
