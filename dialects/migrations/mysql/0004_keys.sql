-- skiplock schema version 4 for MySQL and MariaDB: `order_key`, the per-key order of
-- enqueue(..., key=...), its index, and `<table>_keys`, one row per key ever used: an
-- enqueue of a key locks that row until it commits, so two transactions enqueuing one key
-- get ids in the order they commit. ADD COLUMN is INSTANT; ADD INDEX is INPLACE with
-- LOCK=NONE (reads and writes go on while it builds). A re-run skips what is there.
ALTER TABLE {table} ADD COLUMN order_key VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD INDEX `{prefix}_key` (order_key, claimable, id), ALGORITHM=INPLACE, LOCK=NONE;
CREATE TABLE IF NOT EXISTS {keys_table} (
    order_key VARCHAR(255) NOT NULL PRIMARY KEY
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
