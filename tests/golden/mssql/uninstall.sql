DROP TABLE IF EXISTS [skiplock_jobs_deps];
DROP TABLE IF EXISTS [skiplock_jobs];
DROP TABLE IF EXISTS [skiplock_jobs_ticks];
DROP TABLE IF EXISTS [skiplock_jobs_counters];
DROP TABLE IF EXISTS [skiplock_jobs_schema]

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in [skiplock_jobs_deps]. Id lists are bound as one JSON
-- array read by OPENJSON (2,100 parameters would not hold a 10,000-job group's ids).
-- Locks: an enqueue holds its parents' update locks (UPDLOCK, HOLDLOCK) until it commits
-- and marks them has_children, a parent's end (completion, failure, cancel) updates the
-- parent and then, when it has the mark, locks its waiting children (UPDLOCK); so a
-- parent cannot end between an enqueue's read of its status and the commit of the child's
-- edges, and two parents of one child ending together settle it one after the other.
