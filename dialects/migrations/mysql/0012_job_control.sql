-- skiplock schema migration for MySQL and MariaDB: job control. `progress` (JSON text,
-- set by q.set_progress), `snoozes` (how many times the job was snoozed: the cap of
-- q.snooze and Snooze counts them), `dedupe_until` (enqueue(..., dedupe_key=,
-- dedupe_for=): the end of the key's window) and `debounce_key` (enqueue(...,
-- dedupe_key=, debounce=)). ADD COLUMN is INSTANT; ADD INDEX is INPLACE with LOCK=NONE
-- (reads and writes go on while it builds). A re-run skips what is there.
ALTER TABLE {table} ADD COLUMN progress LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD COLUMN snoozes INT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD COLUMN dedupe_until DATETIME(6) NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD COLUMN debounce_key VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD INDEX `{prefix}_dedupe_window` (dedupe_key, dedupe_until), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table} ADD INDEX `{prefix}_debounce` (debounce_key, status, id), ALGORITHM=INPLACE, LOCK=NONE
