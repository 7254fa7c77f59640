-- skiplock schema migration for MySQL and MariaDB: `<table>_workers`, the live worker list.
-- Each worker process writes its row when it starts (host, pid, queues, concurrency),
-- refreshes it on its heartbeat (jobs in flight, last seen) and deletes it when it stops
-- cleanly; a row whose last_seen is older than a few of its beat_ms is a worker that is
-- gone. A new, small table: the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {workers_table} (
    id          VARCHAR(64)  NOT NULL PRIMARY KEY,
    host        VARCHAR(255) NOT NULL,
    pid         INT          NOT NULL,
    queues      TEXT         NOT NULL,
    concurrency INT          NOT NULL,
    in_flight   INT          NOT NULL DEFAULT 0,
    beat_ms     INT          NOT NULL,
    started_at  DATETIME(6)  NOT NULL,
    last_seen   DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
