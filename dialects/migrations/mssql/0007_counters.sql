-- skiplock schema migration for SQL Server: `<table>_counters`, the table's running totals
-- (one row per name). `pruned` counts the finished jobs deleted by retention and
-- `skiplock prune`, added in each batch's own transaction; stats shows it. A new, small
-- table: the jobs table is not touched.
IF OBJECT_ID(N'{counters_table}', N'U') IS NULL
CREATE TABLE {counters_table} (
    name       NVARCHAR(64) NOT NULL PRIMARY KEY,
    total      BIGINT       NOT NULL DEFAULT 0,
    updated_at DATETIME2(6) NULL
);
IF NOT EXISTS (SELECT 1 FROM {counters_table} WHERE name = N'pruned')
INSERT INTO {counters_table} (name, total) VALUES (N'pruned', 0)
