-- MySQL: a batch's rows read back from its first id (LAST_INSERT_ID()) by the primary key:
-- one range instead of a look-up of each key. The ids of one INSERT grow, by
-- @@auto_increment_increment; other inserts may take ids in between (the dialect keeps the
-- rows whose idempotency keys are its own, and reads any it missed by ids_by_key).
-- One row, the [id, key] pairs as one JSON array (NULL: none): decoded by json's C
-- scanner, 1,000 pairs cost the client less than 1,000 rows (docs/performance.md).
SELECT JSON_ARRAYAGG(JSON_ARRAY(id, idempotency_key)) AS pairs FROM `skiplock_jobs`
WHERE id BETWEEN %(first)s AND %(first)s + (%(n)s - 1) * @@auto_increment_increment
