-- q.wait() by polling: the status of every job this queue's waits wait for, one statement
-- per tick however many wait (primary key look-ups; a job not listed is gone).
SELECT id, status FROM "skiplock_jobs" WHERE id = ANY(%(ids)s::bigint[])
