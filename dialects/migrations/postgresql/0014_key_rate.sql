-- skiplock schema migration for PostgreSQL: rate limits per key (enqueue(..., key=,
-- key_rate=(N, per))). `key_rate` is N and `key_rate_ms` the window in milliseconds,
-- NULL for a job without one; a claim reads them and admits the job under its key's lock
-- (docs/control.md). Nullable columns without a default: a change of the catalog only
-- (no rewrite, the exclusive lock held for an instant).
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS key_rate integer,
    ADD COLUMN IF NOT EXISTS key_rate_ms integer
