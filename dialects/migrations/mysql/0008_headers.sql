-- skiplock schema migration for MySQL and MariaDB: `headers`, the text pairs a job was
-- enqueued with (enqueue(..., headers=...): W3C trace context, a request id) as JSON text;
-- NULL when none. ADD COLUMN is INSTANT (a metadata change). A re-run skips what is there.
ALTER TABLE {table} ADD COLUMN headers TEXT NULL, ALGORITHM=INSTANT
