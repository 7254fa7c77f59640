-- skiplock schema version 3 for PostgreSQL: the periodic ledger `<table>_ticks`, one row
-- per tick of a periodic schedule that was enqueued; its primary key (schedule, tick) is
-- what enqueues each tick once however many workers run. A new, empty table: the jobs
-- table is not touched.
CREATE TABLE IF NOT EXISTS {ticks_table} (
    schedule   text        NOT NULL,
    tick       timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule, tick)
)
