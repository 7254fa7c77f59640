-- Constraints keep the server's generated names: a constraint name is unique per schema,
-- and the same table name may be installed in two schemas.
EXEC sp_getapplock @Resource = N'skiplock install skiplock_jobs', @LockMode = 'Exclusive',
     @LockOwner = 'Transaction', @LockTimeout = 60000;
IF OBJECT_ID(N'[skiplock_jobs]', N'U') IS NULL
CREATE TABLE [skiplock_jobs] (
    id              BIGINT IDENTITY(1, 1) NOT NULL PRIMARY KEY,
    queue           NVARCHAR(255)    NOT NULL,
    payload         NVARCHAR(MAX)    NOT NULL,
    priority        INT              NOT NULL DEFAULT 0,
    status          VARCHAR(16)      NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempt         INT              NOT NULL DEFAULT 0,
    max_attempts    INT              NOT NULL DEFAULT 5,
    run_at          DATETIME2(6)     NOT NULL,
    lease_until     DATETIME2(6)     NULL,
    idempotency_key UNIQUEIDENTIFIER NOT NULL,
    dedupe_key      NVARCHAR(255)    NULL,
    last_error      NVARCHAR(MAX)    NULL,
    result          NVARCHAR(MAX)    NULL,
    created_at      DATETIME2(6)     NOT NULL DEFAULT SYSUTCDATETIME(),
    finished_at     DATETIME2(6)     NULL
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[skiplock_jobs]') AND name = N'skiplock_jobs_claim')
CREATE INDEX [skiplock_jobs_claim] ON [skiplock_jobs] (queue, priority, run_at, id)
    WHERE status IN ('pending', 'running');
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[skiplock_jobs]') AND name = N'skiplock_jobs_dedupe')
CREATE UNIQUE INDEX [skiplock_jobs_dedupe] ON [skiplock_jobs] (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running');
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[skiplock_jobs]') AND name = N'skiplock_jobs_finished')
CREATE INDEX [skiplock_jobs_finished] ON [skiplock_jobs] (finished_at)
    WHERE status IN ('done', 'failed');
-- The periodic ledger: one row per tick enqueued (see _periodic.py).
IF OBJECT_ID(N'[skiplock_jobs_ticks]', N'U') IS NULL
CREATE TABLE [skiplock_jobs_ticks] (
    schedule   NVARCHAR(255) NOT NULL,
    tick       DATETIME2(6)  NOT NULL,
    created_at DATETIME2(6)  NOT NULL DEFAULT SYSUTCDATETIME(),
    PRIMARY KEY (schedule, tick)
)
