-- skiplock schema migration for SQL Server: pause and rate limits (docs/control.md).
-- `<table>_queues`: one row per queue ever paused, its flag read by every claim.
-- `<table>_rates`: one row per claim of a rate-limited queue (its database time and how
-- many jobs it took), written under the queue's claim lock and deleted once older than
-- the window; the index serves the window's sum and the delete. Two new, small tables:
-- the jobs table is not touched.
IF OBJECT_ID(N'{queues_table}', N'U') IS NULL
CREATE TABLE {queues_table} (
    queue      NVARCHAR(255) NOT NULL PRIMARY KEY,
    paused     BIT           NOT NULL DEFAULT 0,
    updated_at DATETIME2(6)  NOT NULL
);
IF OBJECT_ID(N'{rates_table}', N'U') IS NULL
CREATE TABLE {rates_table} (
    id         BIGINT        IDENTITY(1,1) NOT NULL PRIMARY KEY,
    queue      NVARCHAR(255) NOT NULL,
    claimed_at DATETIME2(6)  NOT NULL,
    n          INT           NOT NULL
);
-- the index apart from CREATE TABLE: Babelfish refuses an inline INDEX
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{rates_table}') AND name = N'{prefix}_rates_window')
CREATE INDEX [{prefix}_rates_window] ON {rates_table} (queue, claimed_at)
