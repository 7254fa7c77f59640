-- skiplock schema migration for MySQL and MariaDB: the claim index off VIRTUAL columns, and
-- version 1's claim index gone (issue 23).
-- 0016 built the claim index `{prefix}_ready` on the VIRTUAL column `claim_ready`; on
-- MariaDB 10.11 a pick through it read 787,133 pages for 100 rows of a 300,000-row table,
-- and each claim was slower than the last (docs/performance.md). It is built again on the
-- stored `claimable` (1 while pending or running) and the plain `key_wait` (1 on a pending
-- job waiting behind its key's head): a claim reads (1, NULL, queue, ...), the same rows.
-- Built under a name of its own, then swapped for the old one in one ALTER (the 0016
-- release's claims, running through the upgrade, read claim_ready: they have no index for
-- it from then on, slower, never wrong). `claim_ready` itself stays (that release reads it).
-- Version 1's index (claimable, queue, priority, run_at, id) held every row (no partial
-- index here), so every enqueue wrote an entry for it and every end of a job moved one; it
-- goes. The stored column `claimable` stays (dropping it would rebuild the table).
-- INPLACE with LOCK=NONE throughout: reads and writes go on; a metadata lock for a moment
-- at the start and the end of each. A release older than 0016 still running through the
-- upgrade claims without an index from here on (slower, never wrong):
-- `skiplock migrate --to 16` first, and this one once every worker runs 0016's release
-- (docs/migrations.md). A re-run after a stop half-way skips the index that exists
-- already, or builds the new one again and swaps it in: the end is the same.
ALTER TABLE {table} ADD INDEX `{prefix}_ready_stored`
    (claimable, key_wait, queue, priority, run_at, id), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table} DROP INDEX `{prefix}_ready`,
    RENAME INDEX `{prefix}_ready_stored` TO `{prefix}_ready`, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE {table} DROP INDEX `{prefix}_claim`, ALGORITHM=INPLACE, LOCK=NONE
