-- skiplock schema version 5 for MySQL and MariaDB: `key_limit`, the N of enqueue(...,
-- key=..., key_concurrency=N) (NULL: 1, strict order), and the key index rebuilt on
-- (order_key, status, id), so that the claim's two look-ups of a keyed job (an earlier
-- pending job of its key; the key's running jobs) each read only the rows they look for,
-- however many jobs of the key wait. ADD COLUMN is INSTANT; ADD INDEX is INPLACE with
-- LOCK=NONE (reads and writes go on while it builds); DROP INDEX is a metadata change.
-- A re-run skips what is there.
ALTER TABLE {table} ADD COLUMN key_limit INT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD INDEX `{prefix}_key_state` (order_key, status, id), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table} DROP INDEX `{prefix}_key`, ALGORITHM=INPLACE, LOCK=NONE
