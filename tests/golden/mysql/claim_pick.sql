-- MySQL has no UPDATE … RETURNING: select the rows, then update them, in one short
-- transaction at READ COMMITTED. db_now is the database clock the new lease starts from.
SELECT *, UTC_TIMESTAMP(6) AS db_now FROM `skiplock_jobs`
WHERE claimable = 1 AND queue = %(queue)s AND run_at <= UTC_TIMESTAMP(6)
ORDER BY priority, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
