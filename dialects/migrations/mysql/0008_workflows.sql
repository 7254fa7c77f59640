-- skiplock schema migration for MySQL and MariaDB: workflows (enqueue(..., after=[...])).
-- `<table>_deps` holds one row per (child, parent) edge; its primary key finds a child's
-- parents, the second index a parent's children. The child's row is referenced with ON
-- DELETE CASCADE, so a pruned job takes its edges with it (a foreign key's name is
-- schema-wide: {tag} keeps `Jobs` and `jobs` apart). A new table: the jobs table is not
-- touched (its status CHECK was dropped by 0002, so 'waiting' needs no change there).
CREATE TABLE IF NOT EXISTS {deps_table} (
    child          BIGINT  NOT NULL,
    parent         BIGINT  NOT NULL,
    run_on_failure TINYINT NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent),
    KEY `{prefix}_deps_parent` (parent, child),
    CONSTRAINT `{prefix}_dc_{tag}` FOREIGN KEY (child) REFERENCES {table} (id) ON DELETE CASCADE
) ENGINE = InnoDB
