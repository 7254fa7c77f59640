-- skiplock schema migration for MySQL and MariaDB: pause and rate limits (docs/control.md).
-- `<table>_queues`: one row per queue ever paused, its flag read by every claim.
-- `<table>_rates`: one row per claim of a rate-limited queue (its database time and how
-- many jobs it took), written under the queue's claim lock and deleted once older than
-- the window; the index serves the window's sum and the delete. Two new, small tables:
-- the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {queues_table} (
    queue      VARCHAR(255) NOT NULL PRIMARY KEY,
    paused     TINYINT      NOT NULL DEFAULT 0,
    updated_at DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
CREATE TABLE IF NOT EXISTS {rates_table} (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    queue      VARCHAR(255) NOT NULL,
    claimed_at DATETIME(6)  NOT NULL,
    n          INT          NOT NULL,
    KEY `{prefix}_rates_window` (queue, claimed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
