-- skiplock schema version 4 for PostgreSQL: `order_key`, the per-key order of
-- enqueue(..., key=...). A nullable column without a default is a catalog change (no
-- rewrite). The partial index serves the claim's look-up of a keyed job's predecessors;
-- CREATE INDEX cannot be CONCURRENTLY inside the migration's transaction, so it holds
-- SHARE (reads and claims' row locks go on; INSERT/UPDATE wait) while it reads the table.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS order_key text
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_key_idx" ON {table} (order_key, id)
    WHERE order_key IS NOT NULL AND status IN ('pending', 'running')
