-- skiplock schema migration for PostgreSQL: pause and rate limits (docs/control.md).
-- `<table>_queues`: one row per queue ever paused, its flag read by every claim.
-- `<table>_rates`: one row per claim of a rate-limited queue (its database time and how
-- many jobs it took), written under the queue's claim lock and deleted once older than
-- the window; the index serves the window's sum and the delete. Two new, small tables:
-- the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {queues_table} (
    queue      text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT FALSE,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {rates_table} (
    id         bigserial   PRIMARY KEY,
    queue      text        NOT NULL,
    claimed_at timestamptz NOT NULL,
    n          integer     NOT NULL
);
CREATE INDEX IF NOT EXISTS "{prefix}_rates_idx" ON {rates_table} (queue, claimed_at)
