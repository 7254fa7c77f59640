-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, name FROM sys.columns WHERE object_id = OBJECT_ID(N'[skiplock_jobs]')
UNION ALL
SELECT 'index', name FROM sys.indexes WHERE object_id = OBJECT_ID(N'[skiplock_jobs]') AND name IS NOT NULL
