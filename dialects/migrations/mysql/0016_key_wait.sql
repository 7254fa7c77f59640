-- skiplock schema migration for MySQL and MariaDB: a hot key's head found in constant time
-- (issue 23). `key_wait` is 1 on a pending keyed job enqueued while its key had a pending
-- job (it waits behind the key's head), NULL otherwise. No partial index here: VIRTUAL
-- columns stand in, as in 0015:
--   claim_ready  1 while a job is running, or pending and not waiting; NULL otherwise: it
--                leads the claim's new index, which so holds no waiting job (a claim reads
--                a key's first pending job, not every job of the key)
--   key_waiting  the key of a waiting pending job, else NULL (the repair's index)
-- A claim that takes a keyed job clears the flag of its key's next pending job (docs/sql.md,
-- "Per-key order": the locks that keep the flag right). key_wait is added INSTANT
-- (nothing is copied). MariaDB 10.11 refuses INSTANT (and LOCK=NONE: it would rebuild the
-- table with writes waiting) while any index reads a VIRTUAL column, which 0015's three do;
-- so on MariaDB only (`-- only on MariaDB`: the runner skips such a statement on MySQL) a
-- temporary index on the base columns first takes over the key look-up, 0015's three
-- indexes are dropped, the columns added, and the three built again, INPLACE with LOCK=NONE,
-- like the two new ones: reads and writes go on all along; while they build, a debounced
-- enqueue or a prune reads without its index (slower, never wrong: no index here is
-- unique). The two VIRTUAL columns are INSTANT (nothing stored). The old claim index stays: the
-- previous release's claims, which run through the upgrade, read it. A re-run skips the
-- columns and the indexes (there already).
-- only on MariaDB: the key look-up's index while 0015's is rebuilt
ALTER TABLE {table} ADD INDEX `{prefix}_key_tmp` (order_key, status, id),
    ALGORITHM=INPLACE, LOCK=NONE;
-- only on MariaDB: no index may read a VIRTUAL column while a column is added INSTANT
ALTER TABLE {table} DROP INDEX `{prefix}_key_state`, DROP INDEX `{prefix}_debounce`,
    DROP INDEX `{prefix}_finished`, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table} ADD COLUMN key_wait TINYINT NULL, ALGORITHM=INSTANT;
ALTER TABLE {table}
    ADD COLUMN claim_ready TINYINT AS
        (CASE WHEN status = 'running' OR (status = 'pending' AND key_wait IS NULL) THEN 1 END)
        VIRTUAL,
    ADD COLUMN key_waiting VARCHAR(255) AS
        (CASE WHEN key_wait = 1 AND status = 'pending' THEN order_key END) VIRTUAL,
    ALGORITHM=INSTANT;
-- only on MariaDB: 0015's three indexes again
ALTER TABLE {table}
    ADD INDEX `{prefix}_key_state` (order_key, key_status, id),
    ADD INDEX `{prefix}_debounce` (debounce_key, debounce_status, id),
    ADD INDEX `{prefix}_finished` (finished_status, finished_at),
    ALGORITHM=INPLACE, LOCK=NONE;
-- only on MariaDB: the temporary index is not needed any more
ALTER TABLE {table} DROP INDEX `{prefix}_key_tmp`, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table}
    ADD INDEX `{prefix}_ready` (claim_ready, queue, priority, run_at, id),
    ADD INDEX `{prefix}_key_wait` (key_waiting, id),
    ALGORITHM=INPLACE, LOCK=NONE
