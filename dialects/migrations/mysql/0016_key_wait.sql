-- skiplock schema migration for MySQL and MariaDB: a hot key's head found in constant time
-- (issue 23). `key_wait` is 1 on a pending keyed job enqueued while its key had a pending
-- job (it waits behind the key's head), NULL otherwise. No partial index here: the claim's
-- new index leads with the stored `claimable` (1 while pending or running) and `key_wait`,
-- so a claim reads (1, NULL, queue, ...) and no waiting job (a claim reads a key's first
-- pending job, not every job of the key); a VIRTUAL column, as in 0015, stands in for the
-- repair's index:
--   key_waiting  the key of a waiting pending job, else NULL
-- The claim's index is not on a VIRTUAL column: on MariaDB 10.11 a pick through such an
-- index (a `claim_ready` column, 1 while running or pending and not waiting) read 516,527
-- pages for 100 rows of a 300,000-row table, 120 ms, against 1,205 pages and 2.4 ms
-- through this one (docs/performance.md).
-- A claim that takes a keyed job clears the flag of its key's next pending job (docs/sql.md,
-- "Per-key order": the locks that keep the flag right). key_wait is added INSTANT
-- (nothing is copied). MariaDB 10.11 refuses INSTANT (and LOCK=NONE: it would rebuild the
-- table with writes waiting) while any index reads a VIRTUAL column, which 0015's three do;
-- so on MariaDB only (`-- only on MariaDB`: the runner skips such a statement on MySQL) a
-- temporary index on the base columns first takes over the key look-up, 0015's three
-- indexes are dropped, the columns added, and the three built again, INPLACE with LOCK=NONE,
-- like the two new ones: reads and writes go on all along; while they build, a debounced
-- enqueue or a prune reads without its index (slower, never wrong: no index here is
-- unique). The VIRTUAL column is INSTANT (nothing stored). The old claim index stays: the
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
    ADD INDEX `{prefix}_ready` (claimable, key_wait, queue, priority, run_at, id),
    ADD INDEX `{prefix}_key_wait` (key_waiting, id),
    ALGORITHM=INPLACE, LOCK=NONE
