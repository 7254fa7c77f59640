-- An idle worker's look for new jobs (docs/worker.md): the highest id committed, read from
-- the end of the primary key without reading rows; a change means an enqueue (or a prune).
-- And the count of jobs released by their parents' ends (count_released), one row by its
-- primary key: a release changes no id.
SELECT (SELECT MAX(id) FROM `skiplock_jobs`) AS top,
       (SELECT total FROM `skiplock_jobs_counters` WHERE name = 'released') AS released
