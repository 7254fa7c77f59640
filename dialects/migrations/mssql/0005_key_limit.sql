-- skiplock schema version 5 for SQL Server: `key_limit`, the N of enqueue(..., key=...,
-- key_concurrency=N) (NULL: 1, strict order), and the filtered key index rebuilt on
-- (order_key, status, id), so that the claim's two look-ups of a keyed job each read only
-- the rows they look for. A nullable column without a default is a metadata change; the
-- index is built offline (ONLINE = ON needs Enterprise edition): it holds a shared table
-- lock while it reads the table. The old index goes once the new one exists.
IF COL_LENGTH(N'{table}', N'key_limit') IS NULL
ALTER TABLE {table} ADD key_limit INT NULL
-- commit
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_key_state')
CREATE INDEX [{prefix}_key_state] ON {table} (order_key, status, id)
    WHERE order_key IS NOT NULL AND status IN ('pending', 'running')
-- commit
IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_key')
DROP INDEX [{prefix}_key] ON {table}
