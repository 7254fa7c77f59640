-- skiplock schema migration for PostgreSQL: `<table>_workers`, the live worker list. Each
-- worker process writes its row when it starts (host, pid, queues, concurrency), refreshes
-- it on its heartbeat (jobs in flight, last seen) and deletes it when it stops cleanly; a
-- row whose last_seen is older than a few of its beat_ms is a worker that is gone. A new,
-- small table: the jobs table is not touched.
CREATE TABLE IF NOT EXISTS {workers_table} (
    id          text        PRIMARY KEY,
    host        text        NOT NULL,
    pid         integer     NOT NULL,
    queues      text        NOT NULL,
    concurrency integer     NOT NULL,
    in_flight   integer     NOT NULL DEFAULT 0,
    beat_ms     integer     NOT NULL,
    started_at  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL
)
