-- skiplock schema migration for SQL Server: workflows (enqueue(..., after=[...])).
-- `<table>_deps` holds one row per (child, parent) edge; its primary key finds a child's
-- parents, the second index a parent's children. No foreign key (a user's DROP TABLE of
-- the jobs table would fail on it): retention deletes the edges of the jobs it pruned.
-- The status CHECK gains 'waiting', added WITH NOCHECK (existing rows are not read) and
-- the old one dropped, as 0002 did.
-- has_children: set (1) by the enqueue of a job that waits for this one; a job's end looks
-- for waiting children only when it is set. has_parents: set on a job enqueued with
-- after=[...]; only its claim reads parents' results. Nullable columns without a default
-- are a metadata change.
IF OBJECT_ID(N'{deps_table}', N'U') IS NULL
CREATE TABLE {deps_table} (
    child          BIGINT NOT NULL,
    parent         BIGINT NOT NULL,
    run_on_failure BIT    NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent)
);
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{deps_table}') AND name = N'{prefix}_deps_parent')
CREATE INDEX [{prefix}_deps_parent] ON {deps_table} (parent, child);
IF COL_LENGTH(N'{table}', N'has_children') IS NULL
ALTER TABLE {table} ADD has_children BIT NULL;
IF COL_LENGTH(N'{table}', N'has_parents') IS NULL
ALTER TABLE {table} ADD has_parents BIT NULL;
IF NOT EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'{table}') AND CHARINDEX(N'waiting', definition) > 0)
ALTER TABLE {table} WITH NOCHECK ADD CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'waiting'));
DECLARE @old sysname = (SELECT TOP (1) name FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'{table}') AND CHARINDEX(N'status', definition) > 0 AND CHARINDEX(N'waiting', definition) = 0); DECLARE @sql nvarchar(max) = N'ALTER TABLE {table} DROP CONSTRAINT ' + QUOTENAME(@old); IF @old IS NOT NULL EXEC (@sql)
