-- skiplock schema migration for MySQL and MariaDB: a hot key's head found in constant time
-- (issue 23). `key_wait` is 1 on a pending keyed job enqueued while its key had a pending
-- job (it waits behind the key's head), NULL otherwise. No partial index here: VIRTUAL
-- columns stand in, as in 0015:
--   claim_ready  1 while a job is running, or pending and not waiting; NULL otherwise: it
--                leads the claim's new index, which so holds no waiting job (a claim reads
--                a key's first pending job, not every job of the key)
--   key_waiting  the key of a waiting pending job, else NULL (the repair's index)
-- A claim that takes a keyed job clears the flag of its key's next pending job (docs/sql.md,
-- "Per-key order": the locks that keep the flag right). key_wait's ADD COLUMN names no
-- algorithm: MySQL makes it INSTANT; MariaDB 10.11 refuses INSTANT and LOCK=NONE on a
-- table with indexed VIRTUAL columns (0015's), so it rebuilds the table with LOCK=SHARED:
-- reads go on, writes wait for the rebuild (docs/migrations.md). The two VIRTUAL columns
-- follow in an ALTER of their own, INSTANT (nothing stored); the indexes are built INPLACE with
-- LOCK=NONE (reads and writes go on while they build). The old claim index stays: the
-- previous release's claims, which run through the upgrade, read it. A re-run skips the
-- columns and the indexes (there already).
ALTER TABLE {table} ADD COLUMN key_wait TINYINT NULL;
ALTER TABLE {table}
    ADD COLUMN claim_ready TINYINT AS
        (CASE WHEN status = 'running' OR (status = 'pending' AND key_wait IS NULL) THEN 1 END)
        VIRTUAL,
    ADD COLUMN key_waiting VARCHAR(255) AS
        (CASE WHEN key_wait = 1 AND status = 'pending' THEN order_key END) VIRTUAL,
    ALGORITHM=INSTANT;
ALTER TABLE {table}
    ADD INDEX `{prefix}_ready` (claim_ready, queue, priority, run_at, id),
    ADD INDEX `{prefix}_key_wait` (key_waiting, id),
    ALGORITHM=INPLACE, LOCK=NONE
