-- skiplock schema version 3 for SQL Server: the periodic ledger `<table>_ticks`, one row
-- per tick of a periodic schedule that was enqueued; its primary key (schedule, tick) is
-- what enqueues each tick once however many workers run. A new, empty table: the jobs
-- table is not touched.
IF OBJECT_ID(N'{ticks_table}', N'U') IS NULL
CREATE TABLE {ticks_table} (
    schedule   NVARCHAR(255) NOT NULL,
    tick       DATETIME2(6)  NOT NULL,
    created_at DATETIME2(6)  NOT NULL DEFAULT SYSUTCDATETIME(),
    PRIMARY KEY (schedule, tick)
)
