-- skiplock schema migration for MySQL and MariaDB: workflows (enqueue(..., after=[...])).
-- `<table>_deps` holds one row per (child, parent) edge; its primary key finds a child's
-- parents, the second index a parent's children. No foreign key (a user's DROP TABLE of
-- the jobs table would fail on it): retention deletes the edges of the jobs it pruned.
-- The jobs table's status CHECK was dropped by 0002, so 'waiting' needs no change there.
-- has_children: set (1) by the enqueue of a job that waits for this one; a job's end looks
-- for waiting children only when it is set. has_parents: set on a job enqueued with
-- after=[...]; only its claim reads parents' results. ADD COLUMN is INSTANT, both in one
-- (atomic) statement (a re-run finds them there: migration_done).
CREATE TABLE IF NOT EXISTS {deps_table} (
    child          BIGINT  NOT NULL,
    parent         BIGINT  NOT NULL,
    run_on_failure TINYINT NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent),
    KEY `{prefix}_deps_parent` (parent, child)
) ENGINE = InnoDB;
ALTER TABLE {table} ADD COLUMN has_children TINYINT NULL, ADD COLUMN has_parents TINYINT NULL,
    ALGORITHM=INSTANT
