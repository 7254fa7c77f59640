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
DECLARE @enqueue_first BIGINT = IDENT_CURRENT(N'[skiplock_jobs]');
INSERT INTO [skiplock_jobs] (queue, payload, priority, max_attempts, run_at, idempotency_key, order_key,
                     key_limit, key_rate, key_rate_ms, headers)
SELECT %(queue)s, v.payload, %(priority)s, %(max_attempts)s,
       COALESCE(CAST(%(run_at)s AS DATETIME2(6)),
                DATEADD(MILLISECOND, %(delay_rem_ms)s,
                        DATEADD(SECOND, %(delay_s)s, SYSUTCDATETIME()))),
       v.ikey, %(order_key)s, %(key_limit)s, %(key_rate)s, %(key_rate_ms)s, CAST(%(headers)s AS NVARCHAR(MAX))
FROM (VALUES {rows}) AS v (n, payload, ikey)
ORDER BY v.n;
DECLARE @enqueue_last BIGINT = SCOPE_IDENTITY();
SELECT j.id, j.idempotency_key FROM [skiplock_jobs] AS j WITH (NOLOCK)
WHERE j.id >= @enqueue_first AND j.id <= @enqueue_last
