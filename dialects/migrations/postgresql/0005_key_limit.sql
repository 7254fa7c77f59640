-- skiplock schema version 5 for PostgreSQL: `key_limit`, the N of enqueue(..., key=...,
-- key_concurrency=N) (NULL: 1, strict order), and the key index rebuilt on (order_key,
-- status, id), so that the claim's two look-ups of a keyed job (an earlier pending job of
-- its key; the key's running jobs) each read only the rows they look for, however many
-- jobs of the key wait. A nullable column without a default is a catalog change (no
-- rewrite). CREATE INDEX cannot be CONCURRENTLY inside the migration's transaction, so it
-- holds SHARE (reads and claims' row locks go on; INSERT/UPDATE wait) while it reads the
-- table; the old index is dropped in a transaction of its own once the new one exists.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS key_limit integer
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_key_state_idx" ON {table} (order_key, status, id)
    WHERE order_key IS NOT NULL AND status IN ('pending', 'running')
-- commit
DROP INDEX IF EXISTS "{prefix}_key_idx"
