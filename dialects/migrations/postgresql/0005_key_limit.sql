-- skiplock schema version 5 for PostgreSQL: `key_limit`, the N of enqueue(..., key=...,
-- key_concurrency=N) (NULL: 1, strict order), and the key index rebuilt on (order_key,
-- state, id), so that the claim's two look-ups of a keyed job (an earlier pending job of
-- its key; the key's running jobs) each read only the rows they look for, however many
-- jobs of the key wait. A nullable column without a default is a catalog change (no
-- rewrite). CREATE INDEX cannot be CONCURRENTLY inside the migration's transaction, so it
-- holds SHARE (reads and claims' row locks go on; INSERT/UPDATE wait) while it reads the
-- table; the old index is dropped in a transaction of its own once the new one exists.
-- The state is the expression the claim's look-ups use (0 pending, 1 running, NULL
-- finished), not `status`: a look-up on `status` also fits the claim index, and the
-- planner may take that one (see the claim in postgresql.sql).
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS key_limit integer
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_key_state_idx" ON {table}
    (order_key, (CASE status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END), id)
    WHERE order_key IS NOT NULL
      AND (CASE status WHEN 'pending' THEN 0 WHEN 'running' THEN 1 END) IS NOT NULL
-- commit
DROP INDEX IF EXISTS "{prefix}_key_idx"
