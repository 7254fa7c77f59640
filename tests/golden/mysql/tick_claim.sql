-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once: a
-- second insert of the same tick waits for the first's row lock, then inserts nothing
-- (0 rows) if it committed. IGNORE only ever meets a duplicate key here: the schedule
-- name is checked to fit its column before it is bound.
INSERT IGNORE INTO `skiplock_jobs_ticks` (schedule, tick) VALUES (%(schedule)s, %(tick)s)
