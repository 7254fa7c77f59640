-- skiplock schema migration for MySQL and MariaDB: `<table>_counters`, the table's running
-- totals (one row per name). `pruned` counts the finished jobs deleted by retention and
-- `skiplock prune`, added in each batch's own transaction; stats shows it. A new, small
-- table: the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {counters_table} (
    name       VARCHAR(64) NOT NULL PRIMARY KEY,
    total      BIGINT      NOT NULL DEFAULT 0,
    updated_at DATETIME(6) NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
INSERT IGNORE INTO {counters_table} (name, total) VALUES ('pruned', 0)
