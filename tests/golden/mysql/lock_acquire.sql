-- Session-level, server-wide (the name carries the database and table). Waits up to
-- %(wait_s)s seconds; 1 when granted, 0 on timeout.
SELECT GET_LOCK(%(name)s, %(wait_s)s) AS acquired
