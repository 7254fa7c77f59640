-- skiplock schema version 4 for SQL Server: `order_key`, the per-key order of
-- enqueue(..., key=...), and a filtered index for the claim's look-up of a keyed job's
-- predecessors. A nullable column without a default is a metadata change; the index is
-- built offline (ONLINE = ON needs Enterprise edition): it holds a shared table lock
-- while it reads the table.
IF COL_LENGTH(N'{table}', N'order_key') IS NULL
ALTER TABLE {table} ADD order_key NVARCHAR(255) NULL
-- commit
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_key')
CREATE INDEX [{prefix}_key] ON {table} (order_key, id)
    WHERE order_key IS NOT NULL AND status IN ('pending', 'running')
