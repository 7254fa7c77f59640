-- skiplock schema migration for SQL Server: rate limits per key (enqueue(..., key=,
-- key_rate=(N, per))). `key_rate` is N and `key_rate_ms` the window in milliseconds,
-- NULL for a job without one; a claim reads them and admits the job under its key's lock
-- (docs/control.md). Nullable columns without a default are metadata changes.
IF COL_LENGTH(N'{table}', N'key_rate') IS NULL
ALTER TABLE {table} ADD key_rate INT NULL;
IF COL_LENGTH(N'{table}', N'key_rate_ms') IS NULL
ALTER TABLE {table} ADD key_rate_ms INT NULL
