-- skiplock schema migration for PostgreSQL: job control. `progress` (JSON, set by
-- q.set_progress), `snoozes` (how many times the job was snoozed: the cap of q.snooze and
-- Snooze counts them), `dedupe_until` (enqueue(..., dedupe_key=, dedupe_for=): the end of
-- the key's window) and `debounce_key` (enqueue(..., dedupe_key=, debounce=)). Nullable
-- columns without a default are catalog changes (no rewrite). CREATE INDEX cannot be
-- CONCURRENTLY inside the migration's transaction, so each holds SHARE (reads and claims'
-- row locks go on; INSERT/UPDATE wait) while it reads the table, in a transaction of its own.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS progress json;
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS snoozes integer;
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS dedupe_until timestamptz;
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS debounce_key text
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_dedupe_window_idx" ON {table} (dedupe_key, dedupe_until)
    WHERE dedupe_until IS NOT NULL
-- commit
CREATE INDEX IF NOT EXISTS "{prefix}_debounce_idx" ON {table} (debounce_key, id)
    WHERE debounce_key IS NOT NULL AND status = 'pending'
-- commit
-- q.wait's notification: a waiter marks the job's row `waited` (its own UPDATE, before it
-- reads the job), and the trigger notifies when a waited job's status becomes done,
-- failed or cancelled. The WHEN clause is evaluated before any function call, so a job
-- nobody waits for costs its completion nothing more; the NOTIFY (and the commit-time
-- lock it takes) is paid only while someone waits. CREATE TRIGGER holds SHARE ROW
-- EXCLUSIVE briefly (writes wait; no scan). A nullable column is a catalog change.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS waited boolean;
CREATE OR REPLACE FUNCTION "{prefix}_finished"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('{prefix}_finished', NEW.id::text); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS "{prefix}_finished" ON {table};
CREATE TRIGGER "{prefix}_finished" AFTER UPDATE OF status ON {table} FOR EACH ROW
    WHEN (NEW.waited AND NEW.status IN ('done', 'failed', 'cancelled'))
    EXECUTE PROCEDURE "{prefix}_finished"()
