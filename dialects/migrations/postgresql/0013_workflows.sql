-- skiplock schema migration for PostgreSQL: workflows (enqueue(..., after=[...])).
-- `<table>_deps` holds one row per (child, parent) edge; its primary key finds a child's
-- parents, the second index a parent's children. No foreign key (a user's DROP TABLE of
-- the jobs table would fail on it): retention deletes the edges of the jobs it pruned.
-- The status CHECK gains 'waiting': added NOT VALID, validated in a transaction of its
-- own (reads and writes go on), then the old one dropped, as 0002 did.
-- has_children: set (TRUE) by the enqueue of a job that waits for this one; a job's end
-- looks for waiting children only when it is set. has_parents: set on a job enqueued with
-- after=[...]; only its claim reads parents' results. Nullable columns without a default:
-- a change of the catalog only (no rewrite, the exclusive lock held for an instant).
CREATE TABLE IF NOT EXISTS {deps_table} (
    child          bigint  NOT NULL,
    parent         bigint  NOT NULL,
    run_on_failure boolean NOT NULL DEFAULT FALSE,
    PRIMARY KEY (child, parent)
);
CREATE INDEX IF NOT EXISTS "{prefix}_deps_parent" ON {deps_table} (parent, child);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS has_children boolean,
    ADD COLUMN IF NOT EXISTS has_parents boolean;
ALTER TABLE {table} DROP CONSTRAINT IF EXISTS "{prefix}_status_wf";
ALTER TABLE {table} ADD CONSTRAINT "{prefix}_status_wf"
    CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'waiting')) NOT VALID
-- commit
ALTER TABLE {table} VALIDATE CONSTRAINT "{prefix}_status_wf"
-- commit
ALTER TABLE {table} DROP CONSTRAINT IF EXISTS "{prefix}_status_v2"
