-- skiplock schema migration for SQL Server: `<table>_workers`, the live worker list. Each
-- worker process writes its row when it starts (host, pid, queues, concurrency), refreshes
-- it on its heartbeat (jobs in flight, last seen) and deletes it when it stops cleanly; a
-- row whose last_seen is older than a few of its beat_ms is a worker that is gone. A new,
-- small table: the jobs table is not touched.
IF OBJECT_ID(N'{workers_table}', N'U') IS NULL
CREATE TABLE {workers_table} (
    id          NVARCHAR(64)  NOT NULL PRIMARY KEY,
    host        NVARCHAR(255) NOT NULL,
    pid         INT           NOT NULL,
    queues      NVARCHAR(MAX) NOT NULL,
    concurrency INT           NOT NULL,
    in_flight   INT           NOT NULL DEFAULT 0,
    beat_ms     INT           NOT NULL,
    started_at  DATETIME2(6)  NOT NULL,
    last_seen   DATETIME2(6)  NOT NULL
)
