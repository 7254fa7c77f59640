-- skiplock schema version 6 for PostgreSQL: the enqueue trigger notifies only while a
-- worker waits for jobs. A NOTIFY makes its transaction take the notification queue's
-- lock at commit and hold it until its commit record is flushed, so concurrent enqueuers
-- committed one at a time (bench/notify.py: 0.21-0.33x the rate without the trigger).
--
-- `<table>_idle` holds one row per waiting worker (the backend pid of its LISTEN session),
-- written by the worker before it sleeps and deleted when it claims again. UNLOGGED: no
-- WAL, emptied by a crash (workers then mark themselves again the next time they wait).
-- The trigger takes a shared advisory lock for the enqueuing transaction before it looks
-- (enqueuers never wait for one another on it); a worker, after committing its mark,
-- waits until it can take that lock exclusively (without queueing: a try) before its
-- last look at the table, so every enqueuer that looked before the mark was visible has
-- committed by then, and every later one sees the mark. Outside READ COMMITTED the
-- trigger's look would use the transaction's old snapshot, so there it always notifies.
-- A new table and a new function body: the jobs table is not touched.
CREATE UNLOGGED TABLE IF NOT EXISTS {idle_table} (
    pid   integer     PRIMARY KEY,
    since timestamptz NOT NULL DEFAULT now()
);
CREATE OR REPLACE FUNCTION "{prefix}_notify"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(hashtext('skiplock wake {prefix}')); IF current_setting('transaction_isolation') <> 'read committed' OR EXISTS (SELECT 1 FROM {idle_table}) THEN PERFORM pg_notify('{prefix}', ''); END IF; RETURN NULL; END $$
