-- In a prune batch's transaction, after it deleted jobs: the edges of children that no
-- longer exist (read through the primary key of the jobs table, one look-up per edge).
DELETE FROM "skiplock_jobs_deps"
WHERE NOT EXISTS (SELECT 1 FROM "skiplock_jobs" AS j WHERE j.id = "skiplock_jobs_deps".child)
