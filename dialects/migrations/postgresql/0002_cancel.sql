-- skiplock schema version 2 for PostgreSQL: the `cancelled` status and `cancel_requested`.
-- No statement rewrites the table. Each `-- commit` ends a transaction, so the long part
-- (VALIDATE, which reads every row) holds only SHARE UPDATE EXCLUSIVE: reads and writes
-- go on. The other statements take ACCESS EXCLUSIVE for a moment (catalog changes only);
-- the migrating session's lock_timeout keeps them from queueing workers behind them.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS cancel_requested boolean;
ALTER TABLE {table} DROP CONSTRAINT IF EXISTS "{prefix}_status_v2";
ALTER TABLE {table} ADD CONSTRAINT "{prefix}_status_v2"
    CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled')) NOT VALID
-- commit
ALTER TABLE {table} VALIDATE CONSTRAINT "{prefix}_status_v2"
-- commit
ALTER TABLE {table} DROP CONSTRAINT IF EXISTS "{prefix}_status_check"
