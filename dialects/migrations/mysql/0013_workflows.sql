-- skiplock schema migration for MySQL and MariaDB: workflows (enqueue(..., after=[...])).
-- `<table>_deps` holds one row per (child, parent) edge; its primary key finds a child's
-- parents, the second index a parent's children. No foreign key (a user's DROP TABLE of
-- the jobs table would fail on it): retention deletes the edges of the jobs it pruned.
-- A new table: the jobs table is not touched (its status CHECK was dropped by 0002, so
-- 'waiting' needs no change there).
CREATE TABLE IF NOT EXISTS {deps_table} (
    child          BIGINT  NOT NULL,
    parent         BIGINT  NOT NULL,
    run_on_failure TINYINT NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent),
    KEY `{prefix}_deps_parent` (parent, child)
) ENGINE = InnoDB
