DROP TABLE IF EXISTS `skiplock_jobs_deps`;
DROP TABLE IF EXISTS `skiplock_jobs`;
DROP TABLE IF EXISTS `skiplock_jobs_ticks`;
DROP TABLE IF EXISTS `skiplock_jobs_keys`;
DROP TABLE IF EXISTS `skiplock_jobs_counters`;
DROP TABLE IF EXISTS `skiplock_jobs_schema`

-- ==== workflows ====
-- enqueue(..., after=[...]): the edges live in `skiplock_jobs_deps`. Id lists are bound as one JSON
-- array read by JSON_TABLE (one placeholder, whatever the number of ids). Locks: an
-- enqueue locks its parents FOR UPDATE and marks them has_children, a parent's end
-- (completion, failure, cancel) updates the parent and then, when it has the mark, locks
-- its waiting children FOR UPDATE; so a parent cannot end between an enqueue's read of its
-- status and the commit of the child's edges, and two parents of one child ending together
-- settle it one after the other (a locking read sees the latest committed rows, the
-- parents' statuses are read at READ COMMITTED).
