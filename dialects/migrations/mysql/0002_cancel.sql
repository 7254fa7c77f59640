-- skiplock schema version 2 for MySQL and MariaDB: the `cancelled` status and
-- `cancel_requested`. Both changes are metadata only (ALGORITHM=INSTANT / INPLACE: a brief
-- metadata lock, no table copy). Adding a CHECK constraint always copies the table on
-- MySQL and MariaDB (ALGORITHM=COPY), so the status CHECK is dropped and not replaced:
-- from version 2 on, only skiplock's own statements keep `status` in its set.
-- A statement whose effect is already there (a re-run) is skipped.
ALTER TABLE {table} ADD COLUMN cancel_requested TINYINT NULL, ALGORITHM=INSTANT;
-- The status CHECK is `<table>_status_<tag>`, or `<table>_status` on tables made before the
-- tag existed: drop the one this table has (none: nothing to do).
SET @skiplock_sql = COALESCE((
    SELECT CONCAT('ALTER TABLE {table} DROP CONSTRAINT `', constraint_name, '`, ALGORITHM=INPLACE')
    FROM information_schema.table_constraints
    WHERE table_schema = COALESCE(NULLIF('{schema}', ''), DATABASE()) AND table_name = '{prefix}'
      AND constraint_type = 'CHECK'
      AND constraint_name IN ('{prefix}_status', '{prefix}_status_{tag}')
    LIMIT 1), 'DO 0');
PREPARE skiplock_stmt FROM @skiplock_sql;
EXECUTE skiplock_stmt;
DEALLOCATE PREPARE skiplock_stmt
