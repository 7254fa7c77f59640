-- skiplock schema migration for PostgreSQL: `<table>_counters`, the table's running totals
-- (one row per name). `pruned` counts the finished jobs deleted by retention and
-- `skiplock prune`, added in each batch's own transaction; stats shows it. A new, small
-- table: the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {counters_table} (
    name       text        PRIMARY KEY,
    total      bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz
);
INSERT INTO {counters_table} (name, total) VALUES ('pruned', 0) ON CONFLICT (name) DO NOTHING
