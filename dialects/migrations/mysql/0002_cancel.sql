-- skiplock schema version 2 for MySQL and MariaDB: the `cancelled` status and
-- `cancel_requested`. Both statements are metadata changes (ALGORITHM=INSTANT / INPLACE:
-- a brief metadata lock, no table copy). Adding a CHECK constraint always copies the
-- table on MySQL and MariaDB (ALGORITHM=COPY), so the status CHECK is dropped and not
-- replaced: from version 2 on, only skiplock's own statements keep `status` in its set.
-- A statement whose effect is already there (a re-run, the other name) is skipped.
ALTER TABLE {table} ADD COLUMN cancel_requested TINYINT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} DROP CONSTRAINT `{prefix}_status_{tag}`, ALGORITHM=INPLACE;
-- the name version 1 tables made before {tag} existed carry
ALTER TABLE {table} DROP CONSTRAINT `{prefix}_status`, ALGORITHM=INPLACE
