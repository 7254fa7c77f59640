-- An idle worker's look for new jobs (docs/worker.md): the highest id committed, read from
-- the end of the primary key without reading rows; a change means an enqueue (or a prune).
-- READPAST: an uncommitted insert's locked row is stepped over, not waited for.
-- And the count of jobs released by their parents' ends (count_released), one row by its
-- primary key: a release changes no id (while a release holds the row, NULL: one needless
-- look, then the new count).
SELECT (SELECT MAX(id) FROM [skiplock_jobs] WITH (READPAST)) AS [top],
       (SELECT total FROM [skiplock_jobs_counters] WITH (READPAST) WHERE name = N'released')
           AS released
