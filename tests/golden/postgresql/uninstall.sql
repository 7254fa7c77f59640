-- DROP TABLE takes the trigger with it; the trigger function is dropped on its own.
DROP TABLE IF EXISTS "skiplock_jobs_deps";
DROP TABLE IF EXISTS "skiplock_jobs";
DROP TABLE IF EXISTS "skiplock_jobs_ticks";
DROP TABLE IF EXISTS "skiplock_jobs_idle";
DROP TABLE IF EXISTS "skiplock_jobs_counters";
DROP TABLE IF EXISTS "skiplock_jobs_schema";
DROP FUNCTION IF EXISTS "skiplock_jobs_notify"()

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in "skiplock_jobs_deps". Id lists are bound as one JSON
-- array (the same text on every database: SQL Server's 2,100 parameters would not hold a
-- 10,000-job group's ids). Locks: an enqueue locks its parents (and marks them
-- has_children), a parent's end (completion, failure, cancel) updates the parent and then,
-- when the update returned the mark, locks its waiting children FOR UPDATE; so a parent
-- cannot end between an enqueue's read of its status and the commit of the child's edges,
-- and two parents of one child ending together settle it one after the other, the second
-- seeing the first's end.
