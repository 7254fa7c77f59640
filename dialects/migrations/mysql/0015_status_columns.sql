-- skiplock schema migration for MySQL and MariaDB: indexes whose entries change only for
-- the jobs they serve. MySQL and MariaDB have no partial index, so every index holds every
-- row, and the three whose key held `status` got a new entry at every claim and every end
-- of every job: the key index (order_key, status, id) and the debounce index
-- (debounce_key, status, id) also for jobs without a key, the finished index
-- (status, finished_at) also for jobs that had not finished. Each now reads a VIRTUAL
-- generated column that is NULL where the index does not concern the row:
--   key_status      the status of a job with an order_key (the claim's per-key look-ups)
--   debounce_status the status of a job with a debounce_key (find_debounce)
--   finished_status the status of a finished job (done, failed, cancelled: prune and the
--                   dashboard's recent counts)
-- so a claim or an end of a job with no key writes none of them (docs/performance.md).
-- ADD COLUMN of a VIRTUAL column is INSTANT (nothing stored); each index is rebuilt under
-- its own name in one ALTER, INPLACE with LOCK=NONE (reads and writes go on while it
-- builds; the old definition serves until it is swapped at the end). A re-run skips the
-- columns (there already) and rebuilds the indexes again.
ALTER TABLE {table}
    ADD COLUMN key_status VARCHAR(16) AS
        (CASE WHEN order_key IS NOT NULL THEN status END) VIRTUAL,
    ADD COLUMN debounce_status VARCHAR(16) AS
        (CASE WHEN debounce_key IS NOT NULL THEN status END) VIRTUAL,
    ADD COLUMN finished_status VARCHAR(16) AS
        (CASE WHEN status IN ('done', 'failed', 'cancelled') THEN status END) VIRTUAL,
    ALGORITHM=INSTANT;
ALTER TABLE {table}
    DROP INDEX `{prefix}_key_state`, ADD INDEX `{prefix}_key_state` (order_key, key_status, id),
    DROP INDEX `{prefix}_debounce`,
    ADD INDEX `{prefix}_debounce` (debounce_key, debounce_status, id),
    DROP INDEX `{prefix}_finished`, ADD INDEX `{prefix}_finished` (finished_status, finished_at),
    ALGORITHM=INPLACE, LOCK=NONE
