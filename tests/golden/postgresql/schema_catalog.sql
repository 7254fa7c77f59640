-- The table's columns and indexes (checked before a table without a version record is
-- taken for version 1).
SELECT 'column' AS kind, attname::text AS name FROM pg_attribute
 WHERE attrelid = to_regclass('"skiplock_jobs"') AND attnum > 0 AND NOT attisdropped
UNION ALL
SELECT 'index', c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = to_regclass('"skiplock_jobs"')
