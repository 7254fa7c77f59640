-- skiplock schema migration for MySQL and MariaDB: rate limits per key (enqueue(...,
-- key=, key_rate=(N, per))). `key_rate` is N and `key_rate_ms` the window in
-- milliseconds, NULL for a job without one; a claim reads them and admits the job under
-- its key's lock (docs/control.md). ADD COLUMN is INSTANT; a re-run skips what is there.
ALTER TABLE {table} ADD COLUMN key_rate INT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table} ADD COLUMN key_rate_ms INT NULL, ALGORITHM=INSTANT
