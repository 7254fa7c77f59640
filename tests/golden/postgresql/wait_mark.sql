-- q.wait, before it reads the job: from now on the job's end notifies. A completion that
-- races this waits for its row lock (or this for the completion's), so either it sees the
-- mark or the read that follows sees the job finished.
UPDATE "skiplock_jobs" SET waited = TRUE WHERE id = %(id)s AND waited IS NOT TRUE

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in "skiplock_jobs_deps". Id lists are bound as one JSON
-- array (the same text on every database: SQL Server's 2,100 parameters would not hold a
-- 10,000-job group's ids). Locks: an enqueue locks its parents (and marks them
-- has_children), a parent's end (completion, failure, cancel) updates the parent and then,
-- when the update returned the mark, locks its waiting children FOR UPDATE; so a parent
-- cannot end between an enqueue's read of its status and the commit of the child's edges,
-- and two parents of one child ending together settle it one after the other, the second
-- seeing the first's end.
