-- skiplock schema migration for PostgreSQL: version 1's claim index goes (issue 23). Since
-- 0015 the claim reads `{prefix}_ready_idx`, and the dashboard's overview reads it with
-- `{prefix}_key_wait_idx`; version 1's index held the same pending and running rows, so
-- every enqueue and every claim wrote one index entry for nothing. DROP INDEX holds ACCESS
-- EXCLUSIVE for a moment (a catalog change), waiting at most the migration's lock_timeout
-- for the statements that run on the table. A release older than 0015 still running
-- through the upgrade claims without an index from here on (slower, never wrong):
-- `skiplock migrate --to 15` first, and this one once every worker runs 0015's release
-- (docs/migrations.md).
DROP INDEX IF EXISTS "{prefix}_claim_idx"
