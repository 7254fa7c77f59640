-- In the same transaction, when wait_look found jobs ended: their rows, for their waits.
SELECT * FROM "skiplock_jobs" WHERE id = ANY(%(ids)s::bigint[])
