-- skiplock schema migration for PostgreSQL: a hot key's head found in constant time
-- (issue 23). `key_wait` is TRUE on a pending keyed job enqueued while its key had a pending
-- job (it waits behind the key's head), NULL otherwise; the claim index below leaves such
-- jobs out, so a claim reads a key's first pending job, not every job of the key. A claim
-- that takes a keyed job clears the flag of its key's next pending job (docs/sql.md, "Per-key
-- order": the locks that keep the flag right). A nullable column without a default is a
-- catalog change (no rewrite). CREATE INDEX cannot be CONCURRENTLY inside the migration's
-- transaction, so each holds SHARE (reads and claims' row locks go on; INSERT/UPDATE wait)
-- while it reads the table, in a transaction of its own. The old claim index stays: the
-- previous release's claims, which run through the upgrade, read it.
-- `{prefix}_key_wait_idx` holds the flagged jobs only: the repair finds the keys that have
-- any in one step per key.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS key_wait boolean
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_ready_idx" ON {table} (queue, priority, run_at, id)
    WHERE status = 'running' OR (status = 'pending' AND key_wait IS NULL)
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_key_wait_idx" ON {table} (order_key, id)
    WHERE key_wait AND status = 'pending'
