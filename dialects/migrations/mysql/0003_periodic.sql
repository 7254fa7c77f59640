-- skiplock schema version 3 for MySQL and MariaDB: the periodic ledger `<table>_ticks`,
-- one row per tick of a periodic schedule that was enqueued; its primary key
-- (schedule, tick) is what enqueues each tick once however many workers run. A new,
-- empty table: the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {ticks_table} (
    schedule   VARCHAR(255) NOT NULL,
    tick       DATETIME(6)  NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (schedule, tick)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
