-- skiplock schema version 2 for SQL Server: the `cancelled` status and `cancel_requested`.
-- Metadata changes only, in one transaction: a nullable column without a default, and
-- the status CHECK replaced WITH NOCHECK (existing rows are not read; the new constraint
-- is enforced for every write from now on but marked not trusted).
IF COL_LENGTH(N'{table}', N'cancel_requested') IS NULL
ALTER TABLE {table} ADD cancel_requested BIT NULL;
IF NOT EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'{table}') AND CHARINDEX(N'cancelled', definition) > 0)
ALTER TABLE {table} WITH NOCHECK ADD CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled'));
DECLARE @old sysname = (SELECT TOP (1) name FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'{table}') AND CHARINDEX(N'status', definition) > 0 AND CHARINDEX(N'cancelled', definition) = 0); DECLARE @sql nvarchar(max) = N'ALTER TABLE {table} DROP CONSTRAINT ' + QUOTENAME(@old); IF @old IS NOT NULL EXEC (@sql)
