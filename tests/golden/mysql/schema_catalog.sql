-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, column_name AS name FROM information_schema.columns
 WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s
UNION ALL
SELECT DISTINCT 'index', index_name FROM information_schema.statistics
 WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s
