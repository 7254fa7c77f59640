-- skiplock schema version 1 for mssql: the table, its indexes.
-- This is the DDL that `install` ran before the schema had versions; a table it made is
-- recognised as version 1. Never edit this file: add the next numbered one.

-- Constraints keep the server's generated names: a constraint name is unique per schema,
-- and the same table name may be installed in two schemas.
EXEC sp_getapplock @Resource = N'skiplock install {prefix}', @LockMode = 'Exclusive',
     @LockOwner = 'Transaction', @LockTimeout = 60000;
IF OBJECT_ID(N'{table}', N'U') IS NULL
CREATE TABLE {table} (
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
               WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_claim')
CREATE INDEX [{prefix}_claim] ON {table} (queue, priority, run_at, id)
    WHERE status IN ('pending', 'running');
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_dedupe')
CREATE UNIQUE INDEX [{prefix}_dedupe] ON {table} (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running');
IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_finished')
CREATE INDEX [{prefix}_finished] ON {table} (finished_at)
    WHERE status IN ('done', 'failed')
